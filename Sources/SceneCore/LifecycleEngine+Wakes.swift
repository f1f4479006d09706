/// Background wakes (R34): handing an app its due tasks and notifications, its answers, and
/// the end of a wake. A wake never changes a scene's state.
extension LifecycleEngine {
    mutating func applyBackground(_ command: Command, effects: inout [Effect]) throws(LifecycleError) -> CommandResult {
        switch command {
        case .scheduleTask(let task):
            try scheduleTask(task, effects: &effects)
        case .cancelTask(let app, let identifier):
            try cancelTask(app, identifier: identifier, effects: &effects)
        case .queueNotification(let app, let payload, let priority):
            return .notification(try queueNotification(app, payload: payload, priority: priority, effects: &effects))
        case .wake(let request):
            try wake(request, effects: &effects)
        case .endWake(let app, let subject, _):
            // Success is not reported anywhere yet; the event log may keep it later.
            try endWake(app, subject, effects: &effects)
        case .expireWakes(let app, let kind):
            try expireWakes(app, kind: kind, effects: &effects)
        case .beginActivity(let app, let modes):
            try changeActivity(app, modes, begin: true, effects: &effects)
        case .endActivity(let app, let modes):
            try changeActivity(app, modes, begin: false, effects: &effects)
        default:
            preconditionFailure("\(command) is not background work")
        }
        return .done
    }

    mutating func wake(_ request: WakeRequest, effects: inout [Effect]) throws(LifecycleError) {
        let slot = try checkWake(request)
        let app = apps.records[slot].id
        resumeIfSuspended(slot, cause: .background, effects: &effects)
        for identifier in request.tasks {
            let key = ScheduleKey(app: app, identifier: identifier)
            let task = schedules[key]!
            let detail = WakeDetail(kind: task.kind, identifier: identifier, deadline: clock + configuration.budget(of: task.kind))
            openItem(.task(identifier), detail, .performBackgroundTask, slot: slot, effects: &effects)
            removeSchedule(key, slot: slot)
            effects.append(.scheduleRemoved(key))
        }
        for id in request.notifications {
            let n = notifications[id]!
            let detail = WakeDetail(kind: .notification, identifier: id.description, payload: n.payload,
                                    deadline: clock + configuration.notificationBudget)
            openItem(.notification(id), detail, .didReceiveNotification, slot: slot, effects: &effects)
            removeNotification(id, slot: slot)
            effects.append(.notificationRemoved(id))
        }
        refreshActivity(slot, effects: &effects)
        effects.append(.appChanged(app))
    }

    /// Everything that refuses a wake, before anything changes; returns the app's slot.
    private func checkWake(_ request: WakeRequest) throws(LifecycleError) -> Int {
        guard !request.tasks.isEmpty || !request.notifications.isEmpty else {
            throw .invalidArgument(name: "request", reason: "a wake names at least one task or notification")
        }
        guard let slot = apps.slot(of: request.app) else { throw .noSuchApp(request.app) }
        let record = apps.records[slot]
        guard record.process != .notRunning else {
            throw .invalidTransition(InvalidTransition(command: "wake", app: request.app, session: nil,
                                                       state: record.process.name, reason: "the app is not running: launch it first"))
        }
        var seen = Set<String>()
        for identifier in request.tasks {
            guard schedules[ScheduleKey(app: request.app, identifier: identifier)] != nil else {
                throw .noSuchScheduledTask(request.app, identifier: identifier)
            }
            guard seen.insert(identifier).inserted else {
                throw .invalidArgument(name: "tasks", reason: "task \(identifier) is named twice")
            }
            if record.wakes.contains(where: { $0.subject == .task(identifier) }) {
                throw .invalidArgument(name: "tasks", reason: "task \(identifier) is being handled already")
            }
        }
        var seenIDs = Set<NotificationID>()
        for id in request.notifications {
            guard let n = notifications[id], n.app == request.app else {
                throw .invalidArgument(name: "notifications", reason: "\(id) is not pending for \(request.app)")
            }
            guard seenIDs.insert(id).inserted else {
                throw .invalidArgument(name: "notifications", reason: "\(id) is named twice")
            }
        }
        return slot
    }

    private mutating func openItem(_ subject: WakeItem.Subject, _ detail: WakeDetail, _ name: EventName, slot: Int,
                                   effects: inout [Effect]) {
        let item = WakeItem(subject: subject, kind: detail.kind, seq: nextSequence, beganAt: clock, deadline: detail.deadline)
        emit(name, app: slot, state: .process(.running), cause: .background, detail: .wake(detail), effects: &effects)
        apps.records[slot].wakes.append(item)
    }

    mutating func endWake(_ app: AppID, _ subject: WakeItem.Subject, effects: inout [Effect]) throws(LifecycleError) {
        guard let slot = apps.slot(of: app) else { throw .noSuchApp(app) }
        guard let i = apps.records[slot].wakes.firstIndex(where: { $0.subject == subject }) else {
            throw .notAwaitingWake(app, item: Self.name(of: subject))
        }
        apps.records[slot].wakes.remove(at: i)
        settleAfterWake(slot, effects: &effects)
    }

    /// After an item closed: a woken app with nothing left to do is suspended at once (R34);
    /// otherwise its clocks are recomputed.
    mutating func settleAfterWake(_ slot: Int, effects: inout [Effect]) {
        let record = apps.records[slot]
        if record.process == .running && !record.hasForegroundScene && record.holdsNoBackgroundWork {
            suspend(slot, cause: .background, effects: &effects)
            return
        }
        refreshActivity(slot, effects: &effects)
        effects.append(.appChanged(record.id))
    }

    /// backgroundTaskWillExpire now for the open task items of `kind` that have not had it
    /// (a processing task when pressure rises); each is closed one grace period later.
    mutating func expireWakes(_ app: AppID, kind: WakeKind, effects: inout [Effect]) throws(LifecycleError) {
        guard kind != .notification else {
            throw .invalidArgument(name: "kind", reason: "a notification has no expiration: only refresh or processing")
        }
        guard let slot = apps.slot(of: app) else { throw .noSuchApp(app) }
        var changed = false
        for i in apps.records[slot].wakes.indices {
            let item = apps.records[slot].wakes[i]
            guard item.kind == kind, item.expirationSentAt == nil else { continue }
            sendExpiration(slot, item: i, cause: .background, effects: &effects)
            changed = true
        }
        if changed { schedule(slot) }
    }

    /// One task item's backgroundTaskWillExpire; its detail names when the item closes.
    mutating func sendExpiration(_ slot: Int, item i: Int, cause: EventCause, effects: inout [Effect]) {
        apps.records[slot].wakes[i].expirationSentAt = clock
        let item = apps.records[slot].wakes[i]
        let detail = WakeDetail(kind: item.kind, identifier: Self.name(of: item.subject),
                                deadline: clock + configuration.expirationGrace)
        emit(.backgroundTaskWillExpire, app: slot, state: .process(.running), cause: cause, detail: .wake(detail),
             effects: &effects)
    }

    /// How an item is named to the app: the task's identifier or the notification's id.
    static func name(of subject: WakeItem.Subject) -> String {
        switch subject {
        case .task(let identifier): identifier
        case .notification(let id): id.description
        }
    }
}
