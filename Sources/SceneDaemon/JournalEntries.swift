import SceneCore

/// Stable MESSAGE_ID values, one per kind of entry; systemd/scened.catalog explains each one to
/// `journalctl -x`.
enum MessageID {
    static let sessionConnected = "63a6358d2bf34adca582791479410307"
    static let sessionReconnected = "5cc071eb2c9a4170945493703e9e4be6"
    static let sessionStateChanged = "03ff1b436e2142f8a9ccd1a8b5afceb3"
    static let sessionDisconnected = "cb02602ddea24df7bc9445fd578f6fc5"
    static let sessionDiscarded = "527ca34df3ed4dd29fb3eaff80bc88ba"
    static let appLaunched = "12ddca8058b046b6a3e639e527ee83aa"
    static let appSuspendedResumed = "3ff5f99f99714a59a0f690234423ae56"
    static let appTerminated = "e2efc4a4856b45398af4b80dd41c5ef5"
    static let memoryWarning = "fc3ef97445924e13a723c67fede68c7b"
    static let taskExpiring = "17ca82867dc440a49f26d6c79ec1d65c"
    static let reclaimAction = "5decfa1bf7c440cfb5cd4f973bcedfa4"
    static let pressureChanged = "ab27f099be384865a7c976ba377ea2dd"
    static let pressureUnrelievable = "01637d311d9f483a83e265015b8b8db0"
    static let daemonReady = "09c50662f0824b49bbb2a4f9f93905b2"
    static let daemonStopped = "7753a5a151754a9b84761ec4dc19671d"
    static let configurationReload = "4faa28252d7f49828519797754e71ae9"
    static let storageFailure = "b5264d24c1df4b2bb6986b3cd75487c3"
    static let clientLimit = "1f8145637702418193736669c5e5400b"
    static let permissionDenied = "e6d1b2a4c3f94f6e8a7d5c0b9e1f2a37"
    static let appAttachment = "50a051f3425e437aa792584eef5deb8d"
    static let appDeadlineMissed = "7022d68d85414151a339db69618dd82a"
    static let appProcess = "d755a8f298b64822be95a92e20781b26"
    static let rowQuarantined = "11e83c9298ac403eae2cbba03cc7edd1"
    static let logDamaged = "877aaf2eb2784d9593960151686fcf7a"
    static let logRecovered = "56a2348053394cb4a8fd300aea9936be"
    static let systemStop = "30825777ec1b4eee9228bfb0ff046338"
    static let systemFollow = "0d09308933694b3abc95ce9a6a48527b"
    static let systemHold = "bd9716e0b98141e8905b7fad8397d41d"
    static let backgroundWake = "8c1f4a7e25d94b0c9e3a6f5d2b71c084"
    static let routedOpen = "a050bae4858f48c8ac36b19d8bd13b97"
}

/// One structured journal entry.
struct LogEntry: Equatable {
    var priority: LogLevel
    var messageID: String
    var message: String
    /// Extra fields (names without the SCENED_ prefix are not allowed: every custom field is
    /// ours and says so).
    var fields: [(String, String)]

    static func == (a: LogEntry, b: LogEntry) -> Bool {
        a.priority == b.priority && a.messageID == b.messageID && a.message == b.message
            && a.fields.map(\.0) == b.fields.map(\.0) && a.fields.map(\.1) == b.fields.map(\.1)
    }

    func values(_ name: String) -> [String] { fields.filter { $0.0 == name }.map(\.1) }
}

/// Turns committed events into journal entries: one entry per state change, not per callback.
/// Consecutive events of one session's callback chain (connect, foreground, background,
/// disconnect, discard), or an app's launch or termination, with the same cause form one change
/// (see `continues`). SCENED_EVENTS lists its events in order, space-separated; the
/// repeated SCENED_EVENT and SCENED_SEQ fields are for matching (journalctl SCENED_EVENT=…)
/// only, because journald stores an entry's fields ordered by data object and drops repeated
/// identical values, so their order (and their pairing) does not survive the journal.
enum JournalEntries {
    /// Events whose entries are logged above info (notice): reclaim actions, terminations,
    /// memory warnings, expiring tasks.
    static func isNotable(_ e: LifecycleEvent) -> Bool {
        if case .reclaim = e.cause { return true }
        switch e.name {
        case .terminated, .willTerminate, .didReceiveMemoryWarning, .backgroundTaskWillExpire: return true
        default: return false
        }
    }

    /// - Parameter notableOnly: build entries only for the changes that contain a notable event
    ///   (the ones logged above info). The events are grouped exactly as without it: filtering
    ///   the events before grouping would merge changes that a routine change separated (two
    ///   terminations of an app with a relaunch between them would become one entry).
    /// - Parameter commandStarts: where each command's events begin; a change never spans two
    ///   commands (without it, changes are told apart by their callback chains alone).
    static func entries(for events: [LifecycleEvent], commandStarts: [Int] = [], pressure: PressureLevel,
                        notableOnly: Bool = false) -> [LogEntry] {
        let boundaries = Set(commandStarts)
        var out: [LogEntry] = []
        // Groups are index ranges: events are only copied for the entries actually built.
        func flush(_ range: Range<Int>) {
            if !notableOnly || events[range].contains(where: isNotable) {
                out.append(entry(for: Array(events[range]), pressure: pressure))
            }
        }
        var start = 0
        for i in events.indices.dropFirst()
        where boundaries.contains(i) || !continues(first: events[start], previous: events[i - 1], with: events[i]) {
            flush(start..<i)
            start = i
        }
        if !events.isEmpty { flush(start..<events.count) }
        return out
    }

    /// Whether `e` belongs to the change that began with `first` and so far ends with
    /// `previous`: the same app and cause, and either the next callback of the same session's
    /// chain or one of the two compound app changes (a launch with its queued discards,
    /// willTerminate with its termination).
    ///
    /// A batch holds the events of every command committed together, with no mark where one
    /// command ends, so a change ends where its chain does: the same session backgrounded and
    /// activated again in one batch is two entries (didEnterBackground is not followed by
    /// willEnterForeground within any one command), and other app events are changes of their
    /// own (a termination followed by a relaunch, or a memory warning followed by a termination,
    /// are two entries, not one that names only the last of them).
    private static func continues(first: LifecycleEvent, previous: LifecycleEvent, with e: LifecycleEvent) -> Bool {
        guard first.app == e.app, first.cause.name == e.cause.name else { return false }
        if isLaunchDiscard(e, after: previous) { return true }
        if isWakeStep(previous.name, e.name) { return true }
        let key = groupKey(e)
        guard key == groupKey(first) else { return false }
        if key != 0 { return isSceneChain(previous.name, e.name) }
        return previous.name == .willTerminate && e.name == .terminated
    }

    /// A wake (R34): the resumption of a suspended app and each item handed over are one
    /// change, logged as one entry naming every reason.
    private static func isWakeStep(_ a: EventName, _ b: EventName) -> Bool {
        let handedOver: Set<EventName> = [.performBackgroundTask, .didReceiveNotification]
        return handedOver.contains(b) && (a == .resumed || handedOver.contains(a))
    }

    /// The steps the engine takes within one command on one session: connect (new or again),
    /// the foreground chain, the background chain, disconnection, discard.
    private static func isSceneChain(_ a: EventName, _ b: EventName) -> Bool {
        switch (a, b) {
        case (.configurationForConnecting, .willConnectTo), (.willConnectTo, .willEnterForeground),
             (.willConnectTo, .didEnterBackground), (.willEnterForeground, .didBecomeActive),
             (.willResignActive, .didEnterBackground), (.didEnterBackground, .didDisconnect),
             (.didDisconnect, .didDiscardSceneSessions):
            true
        default:
            false
        }
    }

    /// Discards queued while the app was not running are delivered right after its
    /// didFinishLaunching (R14) and belong to the launch, one session or several.
    private static func isLaunchDiscard(_ e: LifecycleEvent, after previous: LifecycleEvent) -> Bool {
        e.name == .didDiscardSceneSessions && previous.name == .didFinishLaunching && previous.app == e.app
    }

    /// The session a change is about; app events belong to their app, except a single
    /// didDiscardSceneSessions that closes the group of its own session.
    private static func groupKey(_ e: LifecycleEvent) -> UInt64 {
        if e.name.isSceneCallback || e.name == .configurationForConnecting { return e.session?.rawValue ?? 0 }
        if e.name == .didDiscardSceneSessions, let s = e.session { return s.rawValue }
        return 0
    }

    static func entry(for group: [LifecycleEvent], pressure: PressureLevel) -> LogEntry {
        let last = group.last!
        var sessions: [SessionID] = []
        for e in group { for s in e.sessionsConcerned where !sessions.contains(s) { sessions.append(s) } }
        var (id, priority, message) = summary(group, sessions: sessions)
        var fields = commonFields(group, sessions: sessions, pressure: pressure)
        fields += wakeFields(group)
        if case .reclaim(let note) = last.cause {
            // Every reclaim action is its own kind of entry, with the policy's reasons.
            id = MessageID.reclaimAction
            priority = .notice
            message = "Reclaim at \(note.level) pressure: " + message.prefix(1).lowercased() + message.dropFirst()
                + " Reason: \(note.reason); usage \(ByteSize.format(note.usageBefore)) → \(ByteSize.format(note.usageAfter)) of \(ByteSize.format(note.budget))."
            fields.append(("SCENED_RECLAIM_REASON", note.reason))
            fields.append(("SCENED_USAGE_BEFORE", String(note.usageBefore)))
            fields.append(("SCENED_USAGE_AFTER", String(note.usageAfter)))
            fields.append(("SCENED_BUDGET", String(note.budget)))
            if let score = note.score { fields.append(("SCENED_SCORE", "\(score)")) }
        }
        if case .cap(let reason) = last.cause {
            fields.append(("SCENED_CAP", reason))
            message += " Cap: \(reason)."
        }
        return LogEntry(priority: priority, messageID: id, message: message, fields: fields)
    }

    /// What the group of events amounts to: the entry's message id, priority and message.
    private static func summary(_ group: [LifecycleEvent], sessions: [SessionID]) -> (String, LogLevel, String) {
        let last = group.last!
        let names = group.map(\.name)
        let app = last.app.rawValue
        let subject = sessions.count == 1 ? "Session \(sessions[0]) of \(app)" : "App \(app)"
        let callbacks = names.filter(\.isCallback).map(\.name)
        let via = callbacks.isEmpty ? "" : " (" + callbacks.joined(separator: ", ") + ")"
        if names.contains(.didDiscardSceneSessions) && sessions.count == 1 && names.first != .didFinishLaunching {
            return (MessageID.sessionDiscarded, .info, "\(subject) discarded\(via).")
        }
        if names.contains(.configurationForConnecting) {
            return (MessageID.sessionConnected, .info, "\(subject) connected, \(last.state.name)\(via).")
        }
        if case .connect(let restoration, true, _)? = group.first(where: { $0.name == .willConnectTo })?.detail {
            let saved = restoration == nil ? "with no saved state" : "with its saved state"
            return (MessageID.sessionReconnected, .info, "\(subject) reconnected \(saved), \(last.state.name)\(via).")
        }
        if last.name == .didDisconnect {
            return (MessageID.sessionDisconnected, .info, "\(subject) disconnected; session kept\(via).")
        }
        if names.contains(.didFinishLaunching) {
            let discarded = names.contains(.didDiscardSceneSessions)
                ? ", told of \(sessions.count) discarded session\(sessions.count == 1 ? "" : "s")" : ""
            return (MessageID.appLaunched, .info, "App \(app) launched\(discarded)\(via).")
        }
        if names.contains(.terminated) {
            var reason = ""
            if case .terminated(let r, let archived) = last.detail {
                reason = " (\(r.name)); \(archived.count) session\(archived.count == 1 ? "" : "s") archived"
            }
            let after = names.contains(.willTerminate) ? " after willTerminate" : ""
            return (MessageID.appTerminated, .notice, "App \(app) terminated\(reason)\(after).")
        }
        if let wake = wakeSummary(group, app: app) { return wake }
        return appSummary(last, app: app, sessions: sessions) ?? (MessageID.sessionStateChanged, .info, "\(subject) is \(last.state.name)\(via).")
    }

    /// A background wake (R34): one entry per wake, naming why (each task and notification
    /// handed over) and whether the app was thawed or started for it.
    private static func wakeSummary(_ group: [LifecycleEvent], app: String) -> (String, LogLevel, String)? {
        let reasons = group.compactMap(wakeReason)
        guard !reasons.isEmpty else { return nil }
        let how = group.contains { $0.name == .didFinishLaunching } ? " (launched for it)"
            : group.contains { $0.name == .resumed } ? " (thawed)" : ""
        return (MessageID.backgroundWake, .info, "App \(app) woken for background work\(how): \(reasons.joined(separator: ", ")).")
    }

    private static func wakeReason(_ e: LifecycleEvent) -> String? {
        guard e.name == .performBackgroundTask || e.name == .didReceiveNotification,
              case .wake(let wake) = e.detail else { return nil }
        return wake.kind == .notification ? "notification \(wake.identifier)" : "\(wake.kind.name) task \(wake.identifier)"
    }

    private static func wakeFields(_ group: [LifecycleEvent]) -> [(String, String)] {
        group.compactMap { e in
            guard case .wake(let wake) = e.detail else { return nil }
            return ("SCENED_WAKE", "\(wake.kind.name):\(wake.identifier)")
        }
    }

    /// The app-level changes that are one event of their own.
    private static func appSummary(_ last: LifecycleEvent, app: String, sessions: [SessionID]) -> (String, LogLevel, String)? {
        switch last.name {
        case .suspended, .resumed:
            return (MessageID.appSuspendedResumed, .info, "App \(app) \(last.name.name).")
        case .didReceiveMemoryWarning:
            return (MessageID.memoryWarning, .notice, "App \(app) received a memory warning.")
        case .backgroundTaskWillExpire:
            var task = ""
            if case .task(let token, let name) = last.detail { task = " \(token)" + (name.isEmpty ? "" : " (\(name))") }
            if case .wake(let wake) = last.detail { task = " \(wake.identifier) (\(wake.kind.name))" }
            return (MessageID.taskExpiring, .notice, "Background task\(task) of \(app) is expiring.")
        case .didDiscardSceneSessions:
            return (MessageID.sessionDiscarded, .info, "App \(app) told of \(sessions.count) discarded sessions.")
        default:
            return nil
        }
    }

    private static func commonFields(_ group: [LifecycleEvent], sessions: [SessionID], pressure: PressureLevel) -> [(String, String)] {
        let last = group.last!
        var fields: [(String, String)] = [("SCENED_APP", last.app.rawValue)]
        for s in sessions { fields.append(("SCENED_SESSION", s.description)) }
        for e in group {
            fields.append(("SCENED_EVENT", e.name.name))
            fields.append(("SCENED_SEQ", String(e.seq)))
        }
        fields.append(("SCENED_EVENTS", group.map(\.name.name).joined(separator: " ")))
        fields.append(("SCENED_STATE", last.state.name))
        fields.append(("SCENED_APP_STATE", last.appState.name))
        fields.append(("SCENED_CAUSE", last.cause.name))
        fields.append(("SCENED_PRESSURE", pressure.name))
        return fields
    }
}
