import SceneCore

/// What the daemon knows of a session that its event log does not say: its footprint, restore
/// cost and protection (set by calls that make no event), as they are when the trace is made.
public struct HistorySession: Sendable, Equatable {
    public var footprint: UInt64
    public var restoreCostMs: UInt32
    public var isProtected: Bool

    public init(footprint: UInt64, restoreCostMs: UInt32, isProtected: Bool) {
        self.footprint = footprint
        self.restoreCostMs = restoreCostMs
        self.isProtected = isProtected
    }
}

/// A pressure input of the daemon that is no event: a budget (from the pressure history's
/// samples) or an operator's override. It happened before the event numbered `seq`.
public struct HistoryInput: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case budget(UInt64)
        case override(PressureOverride?)
        /// The daemon evaluated the controller (a pass that changed something).
        case decide
    }
    public var seq: UInt64
    public var time: Timestamp
    public var kind: Kind

    public init(seq: UInt64, time: Timestamp, _ kind: Kind) {
        self.seq = seq
        self.time = time
        self.kind = kind
    }
}

/// Turns the daemon's history (its event log, with the inputs that are no events) into a trace
/// that the replayer takes the daemon's reclaim actions on (`scenectl export-trace`).
///
/// Events become the trace lines of what a client or a timer did: connects (`open`, in the
/// background; a foreground connect adds `activate`), activations, deactivations, backgrounds,
/// requested disconnects, discards (`close`), launches, terminations and requested suspensions. What
/// the controller did (cause reclaim or cap) is left out: it is what a replay decides again.
/// Events at start-up (cause restore) are left out too. A session the trace has not opened
/// (it was connected before `since`) is opened when first named. Times are milliseconds after
/// the first event or input (the `settings` line keeps the real time of t=0).
///
/// Fed event by event, so that the daemon can stream a long history in bounded pieces.
public struct HistoryTraceBuilder {
    var settings: TraceSettings
    let sessions: [SessionID: HistorySession]
    let appFootprints: [AppID: UInt64]
    var inputs: [HistoryInput]
    var nextInput = 0
    var budget: UInt64?
    var initialOverride: PressureOverride?
    var base: Timestamp?
    var lastTime: Int64 = 0
    var open: Set<SessionID> = []
    var active: Set<SessionID> = []
    var foreground: Set<SessionID> = []
    var appsWithFootprint: Set<AppID> = []
    /// Open scenes per app, for an app's suspension (a `suspend` line names a scene).
    var scenesOf: [AppID: Set<SessionID>] = [:]

    /// `inputs` in the order they happened; those before `settings.since` only set the state
    /// the trace starts in (the budget then, an override still in force).
    public init(settings: TraceSettings, sessions: [SessionID: HistorySession], appFootprints: [AppID: UInt64],
                budget: UInt64?, inputs: [HistoryInput]) {
        self.settings = settings
        self.sessions = sessions
        self.appFootprints = appFootprints
        self.budget = budget
        let since = settings.since ?? 0
        var later: [HistoryInput] = []
        for input in inputs {
            guard input.seq < since else {
                later.append(input)
                continue
            }
            switch input.kind {
            case .budget(let b): self.budget = b
            case .override(let o): initialOverride = o
            case .decide: break
            }
        }
        self.inputs = later
    }

    /// The lines for one event (with the inputs before it); the first call also gives the header.
    public mutating func add(_ event: LifecycleEvent) -> [TraceEvent] {
        var out = start(at: event.time)
        flushInputs(before: event.seq, into: &out)
        convert(event, into: &out)
        return out
    }

    /// The inputs left after the last event; the header if nothing came.
    public mutating func finish(at now: Timestamp) -> [TraceEvent] {
        var out = start(at: inputs.dropFirst(nextInput).first?.time ?? now)
        flushInputs(before: .max, into: &out)
        return out
    }

    /// A whole history at once (tests, small logs).
    public static func trace(_ events: [LifecycleEvent], settings: TraceSettings, sessions: [SessionID: HistorySession],
                             appFootprints: [AppID: UInt64], budget: UInt64?, inputs: [HistoryInput], end: Timestamp) -> Trace {
        var b = HistoryTraceBuilder(settings: settings, sessions: sessions, appFootprints: appFootprints, budget: budget,
                                    inputs: inputs)
        var lines: [TraceEvent] = []
        for e in events { lines += b.add(e) }
        lines += b.finish(at: end)
        return Trace(events: lines, settings: lines.first.flatMap {
            if case .settings(let s) = $0.kind { s } else { nil }
        })
    }

    // MARK: - Lines

    mutating func start(at time: Timestamp) -> [TraceEvent] {
        guard base == nil else { return [] }
        base = time
        settings.epochMicros = time.microseconds
        var out = [TraceEvent(time: 0, .settings(settings))]
        out.append(TraceEvent(time: 0, .budget(budget.map { .bytes($0) } ?? .unlimited)))
        if let o = initialOverride, o.until.map({ $0 > time }) ?? true {
            out.append(TraceEvent(time: 0, pressure(o, at: time)))
        }
        return out
    }

    /// Milliseconds after the base, never going backwards (the parser requires it).
    mutating func ms(_ t: Timestamp) -> Int64 {
        let value = max(lastTime, (t.microseconds - (base?.microseconds ?? t.microseconds)) / 1000)
        lastTime = value
        return value
    }

    func pressure(_ o: PressureOverride?, at time: Timestamp) -> TraceEvent.Kind {
        guard let o, o.level > .normal else { return .pressure(nil) }
        guard let until = o.until else { return .pressure(o.level) }
        return .timedPressure(o.level, durationMs: max(1, (until.microseconds - time.microseconds + 999) / 1000))
    }

    mutating func flushInputs(before seq: UInt64, into out: inout [TraceEvent]) {
        while nextInput < inputs.count, inputs[nextInput].seq <= seq {
            let input = inputs[nextInput]
            nextInput += 1
            switch input.kind {
            case .budget(let b):
                guard b != budget else { continue }
                budget = b
                out.append(TraceEvent(time: ms(input.time), .budget(.bytes(b))))
            case .override(let o):
                out.append(TraceEvent(time: ms(input.time), pressure(o, at: input.time)))
            case .decide:
                out.append(TraceEvent(time: ms(input.time), .decide))
            }
        }
    }

    /// Opens a session's scene if the trace has not (connected before `since`, or the first
    /// event of a new one).
    mutating func ensureOpen(_ id: SessionID, app: AppID, at t: Int64, into out: inout [TraceEvent]) {
        guard !open.contains(id) else { return }
        if !appsWithFootprint.contains(app), let base = appFootprints[app], base > 0 {
            appsWithFootprint.insert(app)
            out.append(TraceEvent(time: t, .appMem(app: app.rawValue, bytes: base)))
        }
        let facts = sessions[id]
        out.append(TraceEvent(time: t, .open(TraceScene(name: id.description, app: app.rawValue, bytes: facts?.footprint ?? 0,
                                                        restoreMs: facts?.restoreCostMs ?? 0,
                                                        flags: facts?.isProtected == true ? ["protected"] : []))))
        open.insert(id)
        scenesOf[app, default: []].insert(id)
    }

    mutating func close(_ id: SessionID, app: AppID, at t: Int64, into out: inout [TraceEvent]) {
        guard open.remove(id) != nil else { return }
        active.remove(id)
        foreground.remove(id)
        scenesOf[app]?.remove(id)
        out.append(TraceEvent(time: t, .close(id.description)))
    }

    mutating func convert(_ e: LifecycleEvent, into out: inout [TraceEvent]) {
        // Timers (suspension, task expiry) are left to the replay's engine, which runs the
        // same ones from the same settings.
        guard e.cause == .request else { return }
        let t = ms(e.time)
        let scene = e.session?.description
        switch e.name {
        case .willConnectTo:
            guard let id = e.session else { return }
            ensureOpen(id, app: e.app, at: t, into: &out)
        case .didBecomeActive:
            guard let id = e.session else { return }
            ensureOpen(id, app: e.app, at: t, into: &out)
            active.insert(id)
            foreground.insert(id)
            out.append(TraceEvent(time: t, .activate(scene!)))
        case .willResignActive:
            guard let id = e.session, active.remove(id) != nil else { return }
            out.append(TraceEvent(time: t, .deactivate(scene!)))
        case .didEnterBackground:
            guard let id = e.session, open.contains(id), foreground.remove(id) != nil else { return }
            active.remove(id)
            out.append(TraceEvent(time: t, .background(scene!)))
        case .didDisconnect:
            guard let id = e.session, open.contains(id) else { return }
            active.remove(id)
            foreground.remove(id)
            out.append(TraceEvent(time: t, .disconnect(scene!)))
        case .didDiscardSceneSessions:
            if case .discarded(let ids) = e.detail {
                for id in ids { close(id, app: e.app, at: t, into: &out) }
            }
            if let id = e.session { close(id, app: e.app, at: t, into: &out) }
        case .didFinishLaunching:
            if !appsWithFootprint.contains(e.app), let base = appFootprints[e.app], base > 0 {
                appsWithFootprint.insert(e.app)
                out.append(TraceEvent(time: t, .appMem(app: e.app.rawValue, bytes: base)))
            }
            out.append(TraceEvent(time: t, .launch(app: e.app.rawValue)))
        case .terminated:
            for id in scenesOf[e.app] ?? [] {
                active.remove(id)
                foreground.remove(id)
            }
            out.append(TraceEvent(time: t, .terminate(app: e.app.rawValue)))
        case .suspended:
            if let id = scenesOf[e.app]?.min() {
                out.append(TraceEvent(time: t, .suspend(id.description)))
            }
        default:
            return
        }
    }
}
