import SceneCore
import ScenedTestSupport
import Varlink

/// What a scenario expects of one event: its name, session and state (the state after it).
struct Step: Equatable, CustomStringConvertible {
    var event: String
    var app: String
    var session: String?
    var state: String

    var description: String { "\(event) \(app) \(session ?? "-") → \(state)" }
}

/// The expectations of one app, written the way §2 of the reference lists them.
struct Expect {
    let app: String

    func e(_ name: EventName, _ session: String?, _ state: String) -> Step {
        Step(event: name.name, app: app, session: session, state: state)
    }

    // App events.
    var didFinishLaunching: Step { e(.didFinishLaunching, nil, "running") }
    var willTerminate: Step { e(.willTerminate, nil, "running") }
    var terminated: Step { e(.terminated, nil, "notRunning") }
    var suspended: Step { e(.suspended, nil, "suspended") }
    var resumed: Step { e(.resumed, nil, "running") }
    var memoryWarning: Step { e(.didReceiveMemoryWarning, nil, "running") }
    func discarded(_ session: String?) -> Step { e(.didDiscardSceneSessions, session, "running") }
    func taskWillExpire(_ session: String?) -> Step { e(.backgroundTaskWillExpire, session, "running") }

    // Scene callbacks (the state each leaves behind).
    func configuration(_ s: String) -> Step { e(.configurationForConnecting, s, "unattached") }
    func willConnect(_ s: String) -> Step { e(.willConnectTo, s, "unattached") }
    func willEnterForeground(_ s: String) -> Step { e(.willEnterForeground, s, "foregroundInactive") }
    func didBecomeActive(_ s: String) -> Step { e(.didBecomeActive, s, "foregroundActive") }
    func willResignActive(_ s: String) -> Step { e(.willResignActive, s, "foregroundInactive") }
    func didEnterBackground(_ s: String) -> Step { e(.didEnterBackground, s, "background") }
    func didDisconnect(_ s: String) -> Step { e(.didDisconnect, s, "unattached") }

    /// §2.1(a) steps 6–9: a new session to the foreground.
    func newSceneToForeground(_ s: String) -> [Step] {
        [configuration(s), willConnect(s), willEnterForeground(s), didBecomeActive(s)]
    }
    /// §2.2: foregroundActive → background.
    func home(_ s: String) -> [Step] { [willResignActive(s), didEnterBackground(s)] }
    /// §2.3: background → foregroundActive.
    func back(_ s: String) -> [Step] { [willEnterForeground(s), didBecomeActive(s)] }
}

/// One event as the Monitor stream delivered it.
struct ObservedEvent: CustomStringConvertible {
    let object: JSONObject

    var seq: UInt64 { UInt64(object["seq"]?.intValue ?? -1) }
    var event: String { object["event"]?.stringValue ?? "?" }
    var app: String { object["app"]?.stringValue ?? "?" }
    var session: String? { object["session"]?.stringValue }
    var state: String { object["state"]?.stringValue ?? "?" }
    var time: Int64 { object["time"]?.intValue ?? 0 }
    var step: Step { Step(event: event, app: app, session: session, state: state) }

    var description: String { "#\(seq) \(step)" }

    /// The event as the engine's type, for ConformanceChecker; every field the interface
    /// declares must be present and well-formed.
    func lifecycleEvent() throws -> LifecycleEvent {
        func fail(_ what: String) -> TestFailure { TestFailure("malformed event (\(what)): \(object)") }
        guard let seqValue = object["seq"]?.intValue, seqValue > 0 else { throw fail("seq") }
        guard let time = object["time"]?.intValue else { throw fail("time") }
        guard let name = object["event"]?.stringValue.flatMap(EventName.init(name:)) else { throw fail("event") }
        guard let app = object["app"]?.stringValue.flatMap(AppID.init) else { throw fail("app") }
        var session: SessionID?
        if let text = object["session"]?.stringValue {
            guard let id = SessionID(parsing: text) else { throw fail("session") }
            session = id
        }
        let scene = UInt32(object["scene"]?.intValue ?? 0)
        guard let stateText = object["state"]?.stringValue else { throw fail("state") }
        let state: EventState
        if name.isSceneCallback || name == .configurationForConnecting {
            guard let s = SceneActivationState(name: stateText) else { throw fail("scene state") }
            state = .scene(s)
        } else {
            guard let p = ProcessState(name: stateText) else { throw fail("process state") }
            state = .process(p)
        }
        guard let appState = object["appState"]?.stringValue.flatMap(ApplicationState.init(name:)) else { throw fail("appState") }
        let cause: EventCause
        switch object["cause"]?.stringValue {
        case "request": cause = .request
        case "timer": cause = .timer
        case "restore": cause = .restore
        case "cap": cause = .cap("")
        case "shutdown": cause = .shutdown
        case "interruption": cause = .interruption
        case "lock": cause = .lock
        case "session": cause = .session
        case "idle": cause = .idle
        case "sleep": cause = .sleep
        case "background": cause = .background
        case "reclaim":
            let note = object["reclaim"]?.objectValue ?? [:]
            cause = .reclaim(ReclaimNote(level: note["level"]?.stringValue ?? "", usageBefore: UInt64(note["usageBefore"]?.intValue ?? 0),
                                         usageAfter: UInt64(note["usageAfter"]?.intValue ?? 0), budget: UInt64(note["budget"]?.intValue ?? 0),
                                         score: note["score"]?.doubleValue, reason: note["reason"]?.stringValue ?? ""))
        default: throw fail("cause")
        }
        let detail: EventDetail
        switch name {
        case .willConnectTo:
            guard let reconnect = object["reconnect"]?.boolValue else { throw fail("reconnect") }
            detail = .connect(restoration: try Self.restoration(object["restoration"]), reconnect: reconnect,
                              open: try openPayload(fail))
        case .openURLContexts, .continueUserActivity:
            guard let payload = try openPayload(fail) else { throw fail("urlContexts or userActivities") }
            detail = .open(payload)
        case .didDiscardSceneSessions:
            detail = .discarded(try Self.sessions(object["sessions"]))
        case .performBackgroundTask, .didReceiveNotification:
            detail = .wake(try wake(fail))
        case .backgroundTaskWillExpire where object["task"] == nil:
            detail = .wake(try wake(fail))
        case .backgroundTaskWillExpire:
            guard let token = object["task"]?.stringValue.flatMap(TaskToken.init(parsing:)) else { throw fail("task") }
            detail = .task(token, name: object["taskName"]?.stringValue ?? "")
        case .terminated:
            guard let reason = TerminationReason.allCases.first(where: { $0.name == object["reason"]?.stringValue }) else { throw fail("reason") }
            detail = .terminated(reason: reason, archived: try Self.sessions(object["sessions"]))
        default:
            detail = .none
        }
        return LifecycleEvent(seq: UInt64(seqValue), time: Timestamp(microseconds: time), name: name, app: app,
                              session: session, sceneInstance: scene, state: state, appState: appState, cause: cause,
                              detail: detail)
    }

    /// What an event opens a scene with (urlContexts, userActivities), nil when it has neither.
    private func openPayload(_ fail: (String) -> TestFailure) throws -> OpenPayload? {
        let urls = object["urlContexts"]?.arrayValue ?? []
        let activities = object["userActivities"]?.arrayValue ?? []
        guard !urls.isEmpty || !activities.isEmpty else { return nil }
        var payload = OpenPayload()
        for u in urls {
            guard let url = u["url"]?.stringValue else { throw fail("urlContexts.url") }
            payload.urlContexts.append(URLContext(url: url, sourceApplication: u["sourceApplication"]?.stringValue.flatMap(AppID.init)))
        }
        for a in activities {
            guard let type = a["activityType"]?.stringValue else { throw fail("userActivities.activityType") }
            payload.userActivities.append(UserActivity(activityType: type, title: a["title"]?.stringValue,
                                                       userInfo: a["userInfo"].map { $0.serializedString() },
                                                       targetContentIdentifier: a["targetContentIdentifier"]?.stringValue,
                                                       webpageURL: a["webpageURL"]?.stringValue))
        }
        return payload
    }

    /// The detail of a wake's event (R34): its kind, task identifier or notification id,
    /// payload and deadline.
    private func wake(_ fail: (String) -> TestFailure) throws -> WakeDetail {
        guard let kind = object["kind"]?.stringValue.flatMap(WakeKind.init(name:)) else { throw fail("kind") }
        guard let deadline = object["deadline"]?.intValue else { throw fail("deadline") }
        let identifier = kind == .notification ? object["notification"]?.stringValue : object["identifier"]?.stringValue
        guard let identifier else { throw fail("identifier or notification") }
        let payload = object["payload"].map { $0.serializedString() }
        return WakeDetail(kind: kind, identifier: identifier, payload: payload, deadline: Timestamp(microseconds: deadline))
    }

    static func sessions(_ value: JSONValue?) throws -> [SessionID] {
        guard let list = value?.arrayValue else { throw TestFailure("event without its sessions list") }
        return try list.map { item in
            guard let id = item.stringValue.flatMap(SessionID.init(parsing:)) else { throw TestFailure("bad session in list: \(item)") }
            return id
        }
    }

    /// RestorationData as the interface writes it: {"json": value} or {"base64": "..."}.
    static func restoration(_ value: JSONValue?) throws -> RestorationData? {
        guard let value, !value.isNull else { return nil }
        guard case .object(let o) = value else { throw TestFailure("restoration is not an object: \(value)") }
        if let json = o["json"], !json.isNull { return .json(json.serializedString()) }
        if let text = o["base64"]?.stringValue {
            guard let bytes = base64Decode(text) else { throw TestFailure("restoration base64 does not decode: \(text)") }
            return .bytes(bytes)
        }
        throw TestFailure("restoration has neither json nor base64: \(value)")
    }
}

func base64Decode(_ text: String) -> [UInt8]? {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var table = [Int](repeating: -1, count: 256)
    for (i, c) in alphabet.enumerated() { table[Int(c)] = i }
    let chars = Array(text.utf8)
    guard chars.count % 4 == 0 else { return nil }
    var out: [UInt8] = []
    var i = 0
    while i < chars.count {
        var quad = [Int](repeating: 0, count: 4)
        var padding = 0
        for k in 0..<4 {
            let c = chars[i + k]
            if c == UInt8(ascii: "=") { padding += 1; continue }
            guard padding == 0, table[Int(c)] >= 0 else { return nil }
            quad[k] = table[Int(c)]
        }
        let n = (quad[0] << 18) | (quad[1] << 12) | (quad[2] << 6) | quad[3]
        out.append(UInt8((n >> 16) & 0xff))
        if padding < 2 { out.append(UInt8((n >> 8) & 0xff)) }
        if padding < 1 { out.append(UInt8(n & 0xff)) }
        i += 4
    }
    return out
}
