@testable import SceneCore

/// An independent statement of what each command must emit, written from the issue and the
/// reference rather than from the engine: given the engine's state once due timers have fired,
/// the exact (event, session) list a command produces, or the error that refuses it.
enum CommandOracle {
    struct Predicted: Equatable, CustomStringConvertible {
        var name: EventName
        var session: SessionID?
        init(_ name: EventName, _ session: SessionID? = nil) {
            self.name = name
            self.session = session
        }
        init(_ e: LifecycleEvent) { self.init(e.name, e.session) }
        var description: String { "\(name)(\(session.map(\.description) ?? "-"))" }
    }

    enum Refusal: Equatable, CustomStringConvertible {
        case exactly(LifecycleError)
        case invalidTransition
        case invalidArgument
        /// limitExceeded of this setting.
        case limit(String)
        case notAwaitingWake

        func matches(_ error: LifecycleError) -> Bool {
            switch (self, error) {
            case (.exactly(let e), _): e == error
            case (.invalidTransition, .invalidTransition): true
            case (.invalidArgument, .invalidArgument): true
            case (.limit(let name), .limitExceeded(let limit, _, _)): name == limit
            case (.notAwaitingWake, .notAwaitingWake): true
            default: false
            }
        }
        var description: String {
            switch self {
            case .exactly(let e): "\(e)"
            case .invalidTransition: "invalidTransition"
            case .invalidArgument: "invalidArgument"
            case .limit(let name): "limitExceeded(\(name))"
            case .notAwaitingWake: "notAwaitingWake"
            }
        }
    }

    enum Prediction: Equatable, CustomStringConvertible {
        case events([Predicted])
        case refused(Refusal)
        var description: String {
            switch self {
            case .events(let p): "\(p)"
            case .refused(let r): "refused: \(r)"
            }
        }
    }

    typealias P = Predicted

    static func predict(_ command: Command, in e: LifecycleEngine) -> Prediction {
        func open(_ id: SessionID) -> Result<SceneSession, LifecycleError> {
            if let s = e.sessions[id] { return .success(s) }
            let discarded = id.rawValue > 0 && id.rawValue < e.nextSessionNumber
            return .failure(discarded ? .sessionDiscarded(id) : .noSuchSession(id))
        }
        /// What bringing the app's process up costs before a callback: launch (with queued
        /// discards, R14) or resume.
        func bringUp(_ app: AppID) -> [P] {
            guard let a = e.apps[app] else { return [P(.didFinishLaunching)] }
            switch a.process {
            case .running: return []
            case .suspended: return [P(.resumed)]
            case .notRunning:
                var out = [P(.didFinishLaunching)]
                if !a.pendingDiscards.isEmpty {
                    out.append(P(.didDiscardSceneSessions, a.pendingDiscards.count == 1 ? a.pendingDiscards[0] : nil))
                }
                return out + RoutingOracle.launchDeliveries(app, in: e).events
            }
        }
        /// The way down to the background (R3).
        func down(_ s: SceneSession) -> [P] {
            switch s.sceneState {
            case .foregroundActive: [P(.willResignActive, s.id), P(.didEnterBackground, s.id)]
            case .foregroundInactive: [P(.didEnterBackground, s.id)]
            case .background, .unattached: []
            }
        }
        func resumeIfSuspended(_ app: AppID) -> [P] { e.apps[app]?.process == .suspended ? [P(.resumed)] : [] }
        /// R28, R29: a held app's scene stops at foregroundInactive.
        func active(_ app: AppID, _ id: SessionID) -> [P] { e.holds.hold(for: app).level == .none ? [P(.didBecomeActive, id)] : [] }
        /// R32, R33: the foreground scenes go to the background before willTerminate.
        func foregroundDown(_ app: AppID) -> [P] {
            e.sessions.values.filter { $0.app == app && $0.condition == .live }.sorted { $0.id < $1.id }.flatMap(down)
        }
        func isReclaim(_ c: EventCause) -> Bool { if case .reclaim = c { true } else { false } }

        switch command {
        case .tick:
            return .events([])

        case .launch(let app, _):
            if let a = e.apps[app], a.process != .notRunning { return .refused(.invalidTransition) }
            return .events(bringUp(app))

        case .terminate(let app, let cause):
            guard let a = e.apps[app] else { return .refused(.exactly(.noSuchApp(app))) }
            if a.process == .notRunning { return .refused(.invalidTransition) }
            if isReclaim(cause) && a.hasForegroundScene { return .refused(.invalidTransition) }
            return .events((a.process == .running ? foregroundDown(app) + [P(.willTerminate)] : []) + [P(.terminated)])

        case .processDied(let app, _):
            // A crash or a hung process: no callback at all, not even willTerminate.
            guard let a = e.apps[app] else { return .refused(.exactly(.noSuchApp(app))) }
            if a.process == .notRunning { return .refused(.invalidTransition) }
            return .events([P(.terminated)])

        case .connect(let request):
            let n = request.configurationName.utf8.count
            if n == 0 || n > 255 || request.footprint > 1 << 40 { return .refused(.invalidArgument) }
            // Stored Opens delivered by the launch may connect scenes first.
            let launching = (e.apps[request.app]?.process ?? .notRunning) == .notRunning
            let id = SessionID(e.nextSessionNumber
                + UInt64(launching ? RoutingOracle.launchDeliveries(request.app, in: e).scenes.created : 0))
            let tail = request.background ? [P(.didEnterBackground, id)]
                                          : [P(.willEnterForeground, id)] + active(request.app, id)
            return .events(bringUp(request.app) + [P(.configurationForConnecting, id), P(.willConnectTo, id)] + tail)

        case .activate(let id):
            switch open(id) {
            case .failure(let err): return .refused(.exactly(err))
            case .success(let s):
                if s.condition == .archived {
                    // A stored Open the launch delivers may have reconnected it already.
                    if e.apps[s.app]?.process == .notRunning,
                       let state = RoutingOracle.launchDeliveries(s.app, in: e).scenes.state[id] {
                        switch state {
                        case .foregroundActive: return .events(bringUp(s.app))
                        case .foregroundInactive: return .events(bringUp(s.app) + active(s.app, id))
                        case .background, .unattached:
                            return .events(bringUp(s.app) + [P(.willEnterForeground, id)] + active(s.app, id))
                        }
                    }
                    return .events(bringUp(s.app) + [P(.willConnectTo, id), P(.willEnterForeground, id)] + active(s.app, id))
                }
                switch s.sceneState {
                case .foregroundActive: return .events([])
                case .foregroundInactive: return .events(active(s.app, id))
                case .background, .unattached:
                    return .events(resumeIfSuspended(s.app) + [P(.willEnterForeground, id)] + active(s.app, id))
                }
            }

        case .deactivate(let id):
            switch open(id) {
            case .failure(let err): return .refused(.exactly(err))
            case .success(let s):
                if s.condition != .live { return .refused(.invalidTransition) }
                switch s.sceneState {
                case .foregroundInactive: return .events([])
                case .foregroundActive: return .events([P(.willResignActive, id)])
                case .background, .unattached: return .refused(.invalidTransition)
                }
            }

        case .background(let id):
            switch open(id) {
            case .failure(let err): return .refused(.exactly(err))
            case .success(let s):
                if s.condition != .live { return .refused(.invalidTransition) }
                return .events(down(s))
            }

        case .disconnect(let id, let cause):
            switch open(id) {
            case .failure(let err): return .refused(.exactly(err))
            case .success(let s):
                if s.condition != .live { return .events([]) }
                if isReclaim(cause) && s.sceneState != .background { return .refused(.invalidTransition) }
                return .events(resumeIfSuspended(s.app) + down(s) + [P(.didDisconnect, id)])
            }

        case .discard(let id, let cause):
            switch open(id) {
            case .failure(let err): return .refused(.exactly(err))
            case .success(let s):
                if isReclaim(cause) { return .refused(.invalidTransition) }
                if e.apps[s.app]?.process == .notRunning { return .events([]) }
                let release = s.condition == .live ? down(s) + [P(.didDisconnect, id)] : []
                return .events(resumeIfSuspended(s.app) + release + [P(.didDiscardSceneSessions, id)])
            }

        case .saveState(let id, _), .saveUserInfo(let id, _), .setProtected(let id, _):
            if case .failure(let err) = open(id) { return .refused(.exactly(err)) }
            return .events([])

        case .setFootprint(let id, let bytes):
            if case .failure(let err) = open(id) { return .refused(.exactly(err)) }
            return bytes > 1 << 40 ? .refused(.invalidArgument) : .events([])

        case .setAppFootprint(let app, let bytes):
            if e.apps[app] == nil { return .refused(.exactly(.noSuchApp(app))) }
            return bytes > 1 << 40 ? .refused(.invalidArgument) : .events([])

        case .beginTask(let request):
            if request.name.utf8.count > 255 { return .refused(.invalidArgument) }
            var app = request.app
            if let sid = request.session {
                switch open(sid) {
                case .failure(let err): return .refused(.exactly(err))
                case .success(let s):
                    if let given = request.app, given != s.app { return .refused(.invalidArgument) }
                    app = s.app
                }
            }
            guard let appID = app else { return .refused(.invalidArgument) }
            guard let a = e.apps[appID] else { return .refused(.exactly(.noSuchApp(appID))) }
            return a.process == .running ? .events([]) : .refused(.invalidTransition)

        case .endTask(let token):
            return e.tasks[token] == nil ? .refused(.exactly(.noSuchTask(token))) : .events([])

        case .memoryWarning(let targets, _):
            if let targets, let unknown = targets.first(where: { e.apps[$0] == nil }) {
                return .refused(.exactly(.noSuchApp(unknown)))
            }
            let ids = targets.map { Array(Set($0)) } ?? Array(e.apps.keys)
            return .events(ids.sorted().filter { e.apps[$0]?.process == .running }.map { _ in P(.didReceiveMemoryWarning) })

        case .suspend(let app, let cause):
            guard let a = e.apps[app] else { return .refused(.exactly(.noSuchApp(app))) }
            // Before sleep (R31) background tasks, wakes and modes do not keep an app running.
            let tasksHold = cause != .sleep && (!a.tasks.isEmpty || !a.wakes.isEmpty || !a.activeModes.isEmpty)
            if a.process != .running || a.hasForegroundScene || tasksHold { return .refused(.invalidTransition) }
            return .events([P(.suspended)])

        case .resume(let app, _):
            guard let a = e.apps[app] else { return .refused(.exactly(.noSuchApp(app))) }
            return a.process == .suspended ? .events([P(.resumed)]) : .refused(.invalidTransition)

        case .setHolds(let policy):
            return .events(HoldOracle.predict(policy, in: e))

        case .scheduleTask, .cancelTask, .queueNotification, .wake, .endWake, .expireWakes, .beginActivity,
             .endActivity:
            return predictBackground(command, in: e)

        case .open(let request):
            return RoutingOracle.predictOpen(request, in: e)
        case .setActivationConditions(let id, let conditions):
            return RoutingOracle.predictConditions(id, conditions, in: e)
        }
    }

    /// The apps a prediction's events belong to are checked apart: app events carry no session.
    static func apps(of command: Command, in e: LifecycleEngine) -> [AppID]? {
        guard case .memoryWarning(let targets, _) = command else { return nil }
        let ids = targets.map { Array(Set($0)) } ?? Array(e.apps.keys)
        return ids.sorted().filter { e.apps[$0]?.process == .running }
    }
}
