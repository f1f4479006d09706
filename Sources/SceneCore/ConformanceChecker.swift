/// Conformance checking against the UIKit reference (uikit-lifecycle.md §1, §3).
///
/// `ConformanceChecker` consumes `LifecycleEvent`s in sequence order and reports every violation
/// it can prove from the events alone, tagged with the reference rule. It keeps its own model of
/// the world (process states, sessions, scene instances and states), built only from events, so
/// it works equally on the engine's effects and on a daemon's Monitor stream. Two separate,
/// optional checks look at an engine: `disagreements(with:)` compares the event-built model with
/// the engine's state (every state change must have been observable), and
/// `consistencyViolations(of:)` checks the engine's own bookkeeping.
///
/// Rules checked from events:
///   R1 first scene callback of an instance is willConnectTo · R2 didDisconnect ends an instance,
///   a reconnection is a new instance · R3 no foregroundActive → background jump · R4
///   didBecomeActive only from foregroundInactive · R5 (strict mode) willEnterForeground is
///   followed by didBecomeActive · R6 reclaim only disconnects background scenes, never moves a
///   foreground one · R7 enter/leave callbacks alternate · R8 the state an event names is the
///   state it leaves · R9 a disconnect is never a timer's doing (D1) · R10 configurationForConnecting
///   iff a new session · R11 reconnection hands back the saved restoration data (when the caller
///   told the checker what was saved) · R12 no discard under reclaim · R13 disconnect before
///   discard · R14 several-session discards only at launch, right after didFinishLaunching (U4) ·
///   R15 a discarded session never reappears, identifiers are never reused · R16 process death
///   archives exactly the connected scenes · R17 one scene per session · R18 the event's app state
///   is the most active connected scene · R19 nothing before didFinishLaunching · R21 suspension
///   only from the background, after the suspension delay, and no callback reaches a suspended
///   process · R22 willTerminate at most once, only to a running process, right before its death,
///   (strict mode) always for a running process not killed by the task watchdog · R24
///   backgroundTaskWillExpire only in the background, after the budget, once per task per stay;
///   a task kill only one grace after an expiration and with no willTerminate · R25 memory
///   warnings only to running processes · R26 restored sessions reconnect without
///   configurationForConnecting · R27 launch order · R34 a wake's events reach a running process
///   only, a resumption for a wake is followed by the wake's event, a wake moves no scene, and a
///   wake task's timer never warns it before its deadline.
///   Timing (R21 delay, R24 budget and grace) is checked only when `Options.timing` is given; the
///   events do not show tasks beginning or ending, so the checks are lower bounds ("never early").
///   Upper bounds ("never late") need the engine: `consistencyViolations(of:)`.
///
/// Rules not applicable to the daemon, or not checkable here:
///   R20 (app-delegate activation methods are never called): the event vocabulary has no
///     app-level activation callback, so it holds by construction and there is nothing to see.
///   R23 (a didEnterBackground handler over ~5 s gets the process killed): events are delivered
///     asynchronously over a socket; there is no handler return to time.
///   R22's "~5 s", R24's "on the main thread": no threads or handler durations in the daemon.
///   R25's "only after suspended processes were reclaimed" and R6/U6's victim order belong to
///     the reclaim policy, which chooses the commands; the engine only executes them. R25 is
///     checked as "only running processes are warned".
///   R24's "every begin has exactly one end" is a client obligation; the engine answers a second
///     end with `noSuchTask` (ErrorTests) and nothing about it is visible in events.
public struct ConformanceChecker: Sendable {
    public let options: Options
    public private(set) var violations: [ConformanceViolation] = []
    public private(set) var eventsChecked = 0

    var lastSeq: UInt64?
    var lastTime: Timestamp?
    var apps: [AppID: AppModel] = [:]
    var sessions: [SessionID: SessionModel] = [:]
    var discarded: Set<SessionID> = []
    var highestDiscarded: SessionID?
    var saved: [SessionID: SavedRestoration] = [:]
    var knownHolds: HoldPolicy?

    /// A checker for a fresh world (nothing launched, no session), or for one that starts from a
    /// stored engine state (a daemon restart, a Monitor subscription opened late).
    public init(options: Options = Options(), startingFrom snapshot: EngineSnapshot? = nil) {
        self.options = options
        guard let snapshot else { return }
        lastTime = snapshot.clock
        if snapshot.nextSequence > 1 { lastSeq = snapshot.nextSequence - 1 }
        var open = Set<SessionID>()
        for s in snapshot.sessions {
            open.insert(s.id)
            let live = s.condition == .live
            sessions[s.id] = SessionModel(app: s.app, live: live, state: live ? s.sceneState : .unattached,
                                          instance: s.sceneInstance, announced: false, archivedByDeath: !live)
            saved[s.id] = SavedRestoration(data: s.restoration)
        }
        for n in 1..<max(snapshot.nextSessionNumber, 1) where !open.contains(SessionID(n)) {
            discarded.insert(SessionID(n))
        }
        for a in snapshot.apps {
            var m = AppModel()
            m.process = a.process
            m.live = Set(snapshot.sessions.lazy.filter { $0.app == a.id && $0.condition == .live }.map(\.id))
            m.backgroundSince = a.process == .running ? a.backgroundEnteredAt : nil
            for t in snapshot.tasks where t.app == a.id {
                if let sent = t.expirationSentAt { m.expirations[t.token] = sent }
            }
            apps[a.id] = m
        }
    }

    /// Tells the checker which holds are in force from now on (R28, R29): then a
    /// didBecomeActive of a held app is a violation, and a willEnterForeground that stops at
    /// foregroundInactive is not. Without it, holds are inferred from the events' causes.
    public mutating func noteHolds(_ policy: HoldPolicy) {
        knownHolds = policy
        for id in apps.keys { apps[id]!.held = policy.hold(for: id).level != .none }
    }

    /// Tells the checker what a session last saved, so that its reconnection can be held to R11.
    public mutating func noteRestorationSaved(_ data: RestorationData?, for session: SessionID) {
        saved[session] = SavedRestoration(data: data)
    }

    /// Checks every event among the effects, in order.
    @discardableResult
    public mutating func check(effects: [Effect]) -> [ConformanceViolation] {
        var found: [ConformanceViolation] = []
        for case .event(let e) in effects { found += check(e) }
        return found
    }

    @discardableResult
    public mutating func check<S: Sequence>(_ events: S) -> [ConformanceViolation] where S.Element == LifecycleEvent {
        var found: [ConformanceViolation] = []
        for e in events { found += check(e) }
        return found
    }

    /// Checks one event against everything seen before it, and records it.
    @discardableResult
    public mutating func check(_ e: LifecycleEvent) -> [ConformanceViolation] {
        var found = Findings(event: e)
        eventsChecked += 1
        checkStream(e, &found)
        var app = apps[e.app] ?? newApp(e.app)
        app.expect = checkChain(e, app.expect, &found)
        checkProcessRuns(e, app.process, &found)
        if e.cause == .background && (e.name.isSceneCallback || e.name == .configurationForConnecting) {
            found.flag(.R34, "a wake changed the state of scene \(e.session.map(\.description) ?? "-")")
        }
        let expectedState = apply(e, to: &app, &found)
        noteBackground(e, &app)
        checkStates(e, expected: expectedState, app, &found)
        app.previous = e.name
        apps[e.app] = app
        violations += found.list
        return found.list
    }

    private func newApp(_ id: AppID) -> AppModel {
        var app = AppModel()
        app.held = knownHolds.map { $0.hold(for: id).level != .none } ?? false
        return app
    }

    /// The violations found in one event, each tagged with it.
    struct Findings {
        let event: LifecycleEvent
        var list: [ConformanceViolation] = []

        /// A violation concerning the event's own session.
        mutating func flag(_ rule: ConformanceRule, _ message: String) {
            flag(rule, message, session: event.session)
        }

        mutating func flag(_ rule: ConformanceRule, _ message: String, session: SessionID?) {
            list.append(ConformanceViolation(rule: rule, seq: event.seq, app: event.app, session: session,
                                             message: message))
        }
    }

    /// The stream: sequence numbers only grow, time never goes back; a discarded session is
    /// never mentioned again (R15); scene events name their session and instance.
    private mutating func checkStream(_ e: LifecycleEvent, _ found: inout Findings) {
        if let last = lastSeq {
            if e.seq <= last {
                found.flag(.stream, "sequence number \(e.seq) does not grow (previous \(last))")
            } else if options.consecutiveSequence && e.seq != last + 1 {
                found.flag(.stream, "sequence number \(e.seq) skips (previous \(last))")
            }
        }
        if let t = lastTime, e.time < t { found.flag(.stream, "time \(e.time) goes back (previous \(t))") }
        lastSeq = max(lastSeq ?? 0, e.seq)
        lastTime = max(lastTime ?? e.time, e.time)

        for s in e.sessionsConcerned where discarded.contains(s) {
            found.flag(.R15, "event concerns session \(s), which was discarded", session: s)
        }
        if e.name.isSceneCallback || e.name == .configurationForConnecting {
            if e.session == nil { found.flag(.stream, "\(e.name) without a session") }
            if e.sceneInstance == 0 { found.flag(.stream, "\(e.name) without a scene instance") }
        }
    }

    /// Fixed chains: what the previous event of this app demands of this one (R5, R22, R27).
    /// Returns what is still expected after it: an Open that activates a scene hands it its
    /// URLs and activities between willEnterForeground and didBecomeActive.
    private func checkChain(_ e: LifecycleEvent, _ expect: Expectation, _ found: inout Findings) -> Expectation {
        if case .becomeActive(let s) = expect, e.name.isOpen, e.session == s { return expect }
        switch expect {
        case .none:
            break
        case .willConnect(let s):
            if !(e.name == .willConnectTo && e.session == s) {
                found.flag(.R27, "configurationForConnecting(\(s)) must be followed by willConnectTo(\(s)), got \(e.name)")
            }
        case .firstState(let s):
            if !((e.name == .willEnterForeground || e.name == .didEnterBackground) && e.session == s) {
                found.flag(.R27, "willConnectTo(\(s)) must be followed by willEnterForeground or didEnterBackground of \(s), got \(e.name)")
            }
        case .becomeActive(let s):
            if options.strict && !(e.name == .didBecomeActive && e.session == s) {
                found.flag(.R5, "willEnterForeground(\(s)) must be followed by didBecomeActive(\(s)), got \(e.name)")
            }
        case .terminated:
            if e.name != .terminated {
                found.flag(.R22, "willTerminate must be followed by the process's death, got \(e.name)")
            }
        case .wakeEvent:
            if e.name != .performBackgroundTask && e.name != .didReceiveNotification {
                found.flag(.R34, "resumed for a wake must be followed by the wake's event, got \(e.name)")
            }
        }
        return .none
    }

    /// Callbacks need a running process (R19, R21, R22, R25).
    private func checkProcessRuns(_ e: LifecycleEvent, _ process: ProcessState, _ found: inout Findings) {
        guard e.name.isCallback && e.name != .didFinishLaunching else { return }
        switch process {
        case .running:
            break
        case .notRunning:
            found.flag(.R19, "\(e.name) delivered to a process that has not finished launching")
        case .suspended:
            switch e.name {
            case .didReceiveMemoryWarning: found.flag(.R25, "memory warning delivered to a suspended process")
            case .willTerminate: found.flag(.R22, "willTerminate delivered to a suspended process")
            default: found.flag(.R21, "\(e.name) delivered to a suspended process (no resumed first)")
            }
        }
    }

    /// The rules of the event's own kind, applied to the model; returns the state the event
    /// must name as the one it leaves (R8).
    private mutating func apply(_ e: LifecycleEvent, to app: inout AppModel, _ found: inout Findings) -> EventState {
        switch e.name {
        case .didFinishLaunching: return launched(e, &app, &found)
        case .configurationForConnecting: return announced(e, &app, &found)
        case .willConnectTo: return connected(e, &app, &found)
        case .willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground, .didDisconnect:
            return sceneMoved(e, &app, &found)
        case .didDiscardSceneSessions: return discardedSessions(e, &app, &found)
        case .didReceiveMemoryWarning: return .process(.running)
        case .performBackgroundTask, .didReceiveNotification: return wakeDelivered(e, &app, &found)
        case .openURLContexts, .continueUserActivity: return opened(e, &app, &found)
        case .willTerminate: return willTerminate(e, &app, &found)
        case .backgroundTaskWillExpire: return taskWillExpire(e, &app, &found)
        case .suspended: return suspended(e, &app, &found)
        case .resumed: return resumed(e, &app, &found)
        case .terminated: return terminated(e, &app, &found)
        }
    }

    /// didFinishLaunching: only for a process not running, which has no connected scene (R16).
    private func launched(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if app.process != .notRunning { found.flag(.transition, "didFinishLaunching for a process that is \(app.process)") }
        if !app.live.isEmpty { found.flag(.R16, "a new process finds connected scenes \(app.live.sorted())") }
        app.process = .running
        app.willTerminateSent = false
        app.backgroundSince = e.time
        app.expirations = [:]
        return .process(.running)
    }

    /// configurationForConnecting: only for a new session (R10), followed by its willConnectTo.
    private mutating func announced(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        guard let id = e.session else { return .scene(.unattached) }
        if let known = sessions[id] {
            found.flag(.R10, "configurationForConnecting for existing session \(id) (\(known.live ? "live" : "archived"))")
        } else if !discarded.contains(id) {
            sessions[id] = SessionModel(app: e.app, live: false, state: .unattached, instance: 0,
                                        announced: true, archivedByDeath: false)
        }
        app.expect = .willConnect(id)
        return .scene(.unattached)
    }

    /// willConnectTo: a new scene instance (R2) for a session without one (R17), announced if
    /// new (R10), handed its saved data back if not (R11, R26).
    private mutating func connected(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        guard let id = e.session else { return .scene(.unattached) }
        var restoration: RestorationData?
        var reconnect = false
        if case .connect(let r, let again, _) = e.detail {
            restoration = r
            reconnect = again
        } else {
            found.flag(.stream, "willConnectTo without connection details")
        }
        if var s = sessions[id] {
            if s.app != e.app { found.flag(.stream, "session \(id) belongs to \(s.app)") }
            if s.live { found.flag(.R17, "willConnectTo for session \(id), whose scene \(s.instance) is still connected") }
            if s.announced {
                if reconnect { found.flag(.R10, "a new session is marked as a reconnection") }
                if restoration != nil { found.flag(.R11, "a new session carries restoration data") }
            } else {
                let rule: ConformanceRule = s.archivedByDeath ? .R26 : .R11
                if !reconnect { found.flag(rule, "reconnection of \(id) is not marked as one") }
                if app.previous == .configurationForConnecting {
                    found.flag(s.archivedByDeath ? .R26 : .R10,
                               "existing session \(id) reconnects after configurationForConnecting")
                }
                if let note = saved[id], note.data != restoration {
                    found.flag(.R11, "reconnection of \(id) does not hand back the restoration data last saved")
                }
            }
            if e.sceneInstance <= s.instance {
                found.flag(.R2, "reconnection of \(id) reuses scene instance \(e.sceneInstance) (last \(s.instance))")
            }
            s.live = true
            s.state = .unattached
            s.instance = e.sceneInstance
            s.announced = false
            s.archivedByDeath = false
            sessions[id] = s
        } else if !discarded.contains(id) {
            found.flag(.R10, "new session \(id) connects without configurationForConnecting")
            sessions[id] = SessionModel(app: e.app, live: true, state: .unattached, instance: e.sceneInstance,
                                        announced: false, archivedByDeath: false)
        }
        app.live.insert(id)
        app.expect = .firstState(id)
        return .scene(.unattached)
    }

    /// A scene's state callbacks and its disconnection: only for its connected instance (R1,
    /// R2), in the order the reference allows.
    private mutating func sceneMoved(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        let after = Self.stateAfter(e.name)
        guard let id = e.session else { return .scene(after) }
        guard var s = sessions[id], s.app == e.app else {
            if !discarded.contains(id) { found.flag(.R1, "\(e.name) for session \(id), which never connected") }
            return .scene(after)
        }
        if !s.live || e.sceneInstance != s.instance {
            if e.sceneInstance > s.instance || s.instance == 0 {
                found.flag(.R1, "\(e.name) for scene instance \(e.sceneInstance) of \(id) before its willConnectTo")
            } else {
                found.flag(.R2, "\(e.name) for scene instance \(e.sceneInstance) of \(id) after it was disconnected")
            }
            return .scene(after)
        }
        checkSceneOrder(e, id, from: s.state, &app, &found)
        s.state = after
        if e.name == .didDisconnect {
            s.live = false
            s.archivedByDeath = false
            app.live.remove(id)
        }
        sessions[id] = s
        return .scene(after)
    }

    /// openURLContexts, continueUserActivity: only to a connected scene of a running process;
    /// the scene's state does not change.
    private func opened(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if app.process != .running { found.flag(.stream, "\(e.name) for a process that is \(app.process)") }
        guard let id = e.session, let s = sessions[id], s.app == e.app, s.live, e.sceneInstance == s.instance else {
            found.flag(.R1, "\(e.name) for a scene that is not connected")
            return .scene(.unattached)
        }
        if case .open(let payload) = e.detail, !payload.isEmpty {
            let urls = !payload.urlContexts.isEmpty, activities = !payload.userActivities.isEmpty
            if e.name == .openURLContexts ? (!urls || activities) : (urls || !activities) {
                found.flag(.stream, "\(e.name) carries \(payload.urlContexts.count) URLs and \(payload.userActivities.count) activities")
            }
        } else {
            found.flag(.stream, "\(e.name) without what it opens")
        }
        return .scene(s.state)
    }

    /// The order of a connected scene's callbacks: enter and leave alternate (R7), active only
    /// from inactive (R3, R4), reclaim only disconnects background scenes (R6), a timer never
    /// disconnects (R9).
    private func checkSceneOrder(_ e: LifecycleEvent, _ id: SessionID, from before: SceneActivationState,
                                 _ app: inout AppModel, _ found: inout Findings) {
        if case .reclaim = e.cause, e.name != .didDisconnect {
            found.flag(.R6, "reclaim moved scene \(id) (\(e.name)) out of \(before)")
        }
        switch e.name {
        case .willEnterForeground:
            if before.isForeground { found.flag(.R7, "willEnterForeground for a scene already in the foreground (\(before))") }
            // A held app's scene stops at foregroundInactive (R29).
            // A scene a hold moved may return to foregroundInactive, where it was.
            if !app.held && !Self.isSystemHold(e.cause) { app.expect = .becomeActive(id) }
        case .didBecomeActive:
            checkHeldActivation(e, &app, &found)
            if before == .foregroundActive { found.flag(.R7, "didBecomeActive twice without willResignActive") }
            if before == .background || before == .unattached {
                found.flag(.R4, "didBecomeActive from \(before) without willEnterForeground")
            }
        case .willResignActive:
            if before != .foregroundActive { found.flag(.R7, "willResignActive for a scene that is \(before)") }
            if knownHolds == nil && Self.isSystemHold(e.cause) { app.held = true }
        case .didEnterBackground:
            app.lastEnteredBackground = e.time
            if before == .foregroundActive { found.flag(.R3, "didEnterBackground straight from foregroundActive") }
            if before == .background { found.flag(.R7, "didEnterBackground twice without willEnterForeground") }
        case .didDisconnect:
            if case .reclaim = e.cause, before != .background {
                found.flag(.R6, "reclaim disconnected scene \(id) from \(before)")
            } else if before == .foregroundActive {
                found.flag(.R3, "didDisconnect straight from foregroundActive")
            } else if before == .foregroundInactive && options.strict {
                found.flag(.transition, "didDisconnect straight from foregroundInactive (S10 shortcut)")
            } else if before == .unattached {
                found.flag(.transition, "didDisconnect of a scene that never reached a state")
            }
            if case .timer = e.cause { found.flag(.R9, "a timer disconnected scene \(id) (D1: disconnect is a decision)") }
        default:
            break
        }
    }

    /// No scene of a held app becomes active (R28, R29); without told holds, a return by a
    /// system cause ends the inferred hold.
    private func checkHeldActivation(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) {
        if knownHolds != nil {
            if app.held { found.flag(.R28, "didBecomeActive while the system holds the app's scenes down") }
        } else if Self.isSystemHold(e.cause) {
            app.held = false
        }
    }

    /// didDiscardSceneSessions: never under reclaim (R12), only of disconnected sessions (R13),
    /// several at once only at launch (R14).
    private mutating func discardedSessions(_ e: LifecycleEvent, _ app: inout AppModel,
                                            _ found: inout Findings) -> EventState {
        if case .reclaim = e.cause { found.flag(.R12, "sessions discarded to reclaim memory") }
        guard case .discarded(let ids) = e.detail else {
            found.flag(.stream, "didDiscardSceneSessions without the discarded set")
            return .process(.running)
        }
        if ids.isEmpty { found.flag(.stream, "didDiscardSceneSessions with an empty set") }
        if ids.count > 1 && app.previous != .didFinishLaunching {
            found.flag(.R14, "a discard of several sessions outside the launch sequence")
        }
        if let s = e.session, !ids.contains(s) { found.flag(.stream, "event session \(s) is not in the discarded set") }
        for id in ids {
            if let s = sessions[id] {
                if s.app != e.app { found.flag(.stream, "session \(id) belongs to \(s.app)", session: id) }
                if s.live { found.flag(.R13, "session \(id) discarded while its scene is connected", session: id) }
            }
            sessions[id] = nil
            saved[id] = nil
            app.live.remove(id)
            discarded.insert(id)
            highestDiscarded = max(highestDiscarded ?? id, id)
        }
        return .process(.running)
    }

    /// willTerminate: at most once per process life (R22), followed by its death.
    private func willTerminate(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if app.willTerminateSent { found.flag(.R22, "willTerminate twice in one process life") }
        if hasForegroundScene(app) { found.flag(.R33, "willTerminate before the foreground scenes went to the background") }
        app.willTerminateSent = true
        app.expect = .terminated
        return .process(.running)
    }

    /// backgroundTaskWillExpire: only in the background, once per task per stay, never before
    /// the budget ran out (R24).
    private func taskWillExpire(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if case .wake(let wake) = e.detail { return wakeWillExpire(e, wake, app, &found) }
        if hasForegroundScene(app) {
            found.flag(.R24, "backgroundTaskWillExpire while a scene is in the foreground")
        }
        if case .task(let token, _) = e.detail {
            if app.expirations[token] != nil {
                found.flag(.R24, "backgroundTaskWillExpire twice for \(token) in one stay in the background")
            }
            app.expirations[token] = e.time
        } else {
            found.flag(.stream, "backgroundTaskWillExpire without its task")
        }
        if let timing = options.timing, let since = app.backgroundSince, e.time < since + timing.backgroundTaskBudget {
            found.flag(.R24, "task expired at \(e.time), before the budget ran out (background since \(since))")
        }
        return .process(.running)
    }

    /// suspended: only a running process in the background, never before the suspension delay
    /// (R21).
    private func suspended(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if app.process != .running { found.flag(.transition, "suspended while \(app.process)") }
        if hasForegroundScene(app) { found.flag(.R21, "suspended with a scene in the foreground") }
        if case .timer = e.cause, let timing = options.timing {
            if let since = app.backgroundSince, e.time < since + timing.suspendDelay {
                found.flag(.R21, "suspended at \(e.time), before the suspension delay ran out (background since \(since))")
            }
            if let last = app.lastEnteredBackground, e.time < last + timing.suspendDelay {
                found.flag(.R21, "suspended at \(e.time), within the suspension delay of didEnterBackground at \(last)")
            }
        }
        app.process = .suspended
        app.backgroundSince = nil
        app.expirations = [:]
        return .process(.suspended)
    }

    private func resumed(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if app.process != .suspended { found.flag(.transition, "resumed while \(app.process)") }
        if e.cause == .background { app.expect = .wakeEvent }
        app.process = .running
        app.backgroundSince = e.time
        return .process(.running)
    }

    /// terminated: archives exactly the connected scenes (R16); willTerminate before it or not
    /// as the reason demands (R22, R24); reclaim never kills a foreground app (R6).
    private mutating func terminated(_ e: LifecycleEvent, _ app: inout AppModel, _ found: inout Findings) -> EventState {
        if app.process == .notRunning { found.flag(.transition, "terminated while not running") }
        guard case .terminated(let reason, let archived) = e.detail else {
            found.flag(.stream, "terminated without its reason")
            return .process(.notRunning)
        }
        if Set(archived) != app.live || archived.count != app.live.count {
            found.flag(.R16, "process death archived \(archived) but the connected scenes were \(app.live.sorted())")
        }
        switch reason {
        case .backgroundTaskExpired:
            if app.willTerminateSent { found.flag(.R24, "willTerminate before a background-task kill") }
            if app.expirations.isEmpty {
                found.flag(.R24, "killed for an expired task with no backgroundTaskWillExpire in this stay in the background")
            } else if let timing = options.timing,
                      !app.expirations.values.contains(where: { $0 + timing.expirationGrace <= e.time }) {
                found.flag(.R24, "killed for an expired task before the expiration grace ran out")
            }
        case .exited, .hung:
            // A crash or a kill for a missed deadline: no callback at all (R23, §4.3).
            if app.willTerminateSent { found.flag(.R22, "willTerminate before the process \(reason)") }
        case .requested, .memoryPressure, .shutdown:
            if reason == .shutdown && e.cause != .shutdown { found.flag(.R32, "a shutdown termination with cause \(e.cause.name)") }
            if options.strict && app.process == .running && !app.willTerminateSent {
                found.flag(.R22, "a running process was terminated without willTerminate")
            }
            if case .reclaim = e.cause, hasForegroundScene(app) {
                found.flag(.R6, "reclaim terminated an app with a scene in the foreground")
            }
        }
        for id in app.live {
            sessions[id]?.live = false
            sessions[id]?.state = .unattached
            sessions[id]?.archivedByDeath = true
        }
        app.live = []
        app.process = .notRunning
        app.lastEnteredBackground = nil
        app.willTerminateSent = false
        app.backgroundSince = nil
        app.expirations = [:]
        return .process(.notRunning)
    }

    private func hasForegroundScene(_ app: AppModel) -> Bool {
        app.live.contains(where: { sessions[$0]?.state.isForeground == true })
    }

    /// Entering and leaving the background, for the timing rules.
    private func noteBackground(_ e: LifecycleEvent, _ app: inout AppModel) {
        guard app.process == .running else { return }
        if hasForegroundScene(app) {
            app.backgroundSince = nil
            app.expirations = [:]
        } else if app.backgroundSince == nil {
            app.backgroundSince = e.time
        }
    }

    /// R8: the state an event names is the state it leaves. R18: the app's state is its most
    /// active connected scene.
    private func checkStates(_ e: LifecycleEvent, expected: EventState, _ app: AppModel, _ found: inout Findings) {
        if e.state != expected { found.flag(.R8, "\(e.name) leaves \(e.state), expected \(expected)") }
        var liveStates: [SceneActivationState] = []
        for id in app.live { if let s = sessions[id] { liveStates.append(s.state) } }
        let derived = ApplicationState.derive(from: liveStates)
        if e.appState != derived { found.flag(.R18, "app state \(e.appState), but its scenes make it \(derived)") }
    }
}
