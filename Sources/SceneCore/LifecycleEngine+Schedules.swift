/// Scheduled background tasks and pending notifications (R34): the stored tables, each app's
/// derived lists of them, and the earliest due time, changed together and only here.
extension LifecycleEngine {
    static let maxScheduleIdentifierBytes = 255

    mutating func scheduleTask(_ request: ScheduledTask, effects: inout [Effect]) throws(LifecycleError) {
        let bytes = request.identifier.utf8.count
        guard bytes >= 1 && bytes <= Self.maxScheduleIdentifierBytes else {
            throw .invalidArgument(name: "identifier", reason: "must be 1 to \(Self.maxScheduleIdentifierBytes) bytes, not \(bytes)")
        }
        guard request.kind != .notification else {
            throw .invalidArgument(name: "kind", reason: "a scheduled task is refresh or processing")
        }
        if let slot = apps.slot(of: request.app), schedules[request.key] == nil {
            let count = apps.records[slot].scheduled.count
            guard count < configuration.maxScheduledTasks else {
                throw .limitExceeded(limit: "MaxScheduledTasks", maximum: configuration.maxScheduledTasks,
                                     reason: "\(request.app) already has \(count) scheduled tasks")
            }
        }
        let slot = ensureApp(request.app, effects: &effects)
        var task = request
        task.submittedAt = clock
        insertSchedule(task, slot: slot)
        effects.append(.scheduleChanged(task.key))
    }

    mutating func cancelTask(_ app: AppID, identifier: String, effects: inout [Effect]) throws(LifecycleError) {
        let key = ScheduleKey(app: app, identifier: identifier)
        guard schedules[key] != nil, let slot = apps.slot(of: app) else {
            throw .noSuchScheduledTask(app, identifier: identifier)
        }
        removeSchedule(key, slot: slot)
        effects.append(.scheduleRemoved(key))
    }

    /// Pending notifications and those being handled count against the same bound: a flood
    /// cannot grow the table by waking the app.
    mutating func queueNotification(_ app: AppID, payload: String, priority: NotificationPriority,
                                    effects: inout [Effect]) throws(LifecycleError) -> NotificationID {
        if let slot = apps.slot(of: app) {
            let count = Self.notificationsHeld(by: apps.records[slot])
            guard count < configuration.maxPendingNotifications else {
                throw .limitExceeded(limit: "MaxPendingNotifications", maximum: configuration.maxPendingNotifications,
                                     reason: "\(app) already has \(count) notifications pending or being handled")
            }
        }
        let slot = ensureApp(app, effects: &effects)
        let id = NotificationID(nextNotificationNumber)
        nextNotificationNumber += 1
        notifications[id] = PendingNotification(id: id, app: apps.records[slot].id, payload: payload,
                                                priority: priority, queuedAt: clock)
        // Ids only grow: appending keeps the list in id order.
        apps.records[slot].pendingNotifications.append(id)
        effects.append(.notificationChanged(id))
        return id
    }

    static func notificationsHeld(by app: AppRecord) -> Int {
        var open = 0
        for item in app.wakes where item.kind == .notification { open += 1 }
        return app.pendingNotifications.count + open
    }

    // MARK: - The tables

    mutating func insertSchedule(_ task: ScheduledTask, slot: Int) {
        if schedules.updateValue(task, forKey: task.key) == nil {
            let i = Self.position(of: task.identifier, in: apps.records[slot].scheduled)
            apps.records[slot].scheduled.insert(task.identifier, at: i)
        }
        scheduleIndex.push(.init(time: task.earliestBegin, key: task.key))
        nextScheduleDue = scheduleIndex.earliest(in: schedules)
    }

    mutating func removeSchedule(_ key: ScheduleKey, slot: Int) {
        guard schedules.removeValue(forKey: key) != nil else { return }
        let i = Self.position(of: key.identifier, in: apps.records[slot].scheduled)
        if i < apps.records[slot].scheduled.count && apps.records[slot].scheduled[i] == key.identifier {
            apps.records[slot].scheduled.remove(at: i)
        }
        nextScheduleDue = scheduleIndex.earliest(in: schedules)
    }

    /// Where `identifier` is or belongs in a sorted list.
    static func position(of identifier: String, in list: [String]) -> Int {
        var low = 0, high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid] < identifier { low = mid + 1 } else { high = mid }
        }
        return low
    }

    mutating func removeNotification(_ id: NotificationID, slot: Int) {
        guard notifications.removeValue(forKey: id) != nil else { return }
        if let i = apps.records[slot].pendingNotifications.firstIndex(of: id) {
            apps.records[slot].pendingNotifications.remove(at: i)
        }
    }

    /// Adopts stored schedules and notifications; refuses ones of unknown apps and duplicates.
    mutating func restoreBackgroundWork(_ stored: [ScheduledTask], _ pending: [PendingNotification],
                                        nextNotification: UInt64) throws(LifecycleError) {
        for task in stored.sorted(by: { $0.key < $1.key }) {
            guard let slot = apps.slot(of: task.app) else {
                throw .invalidArgument(name: "snapshot", reason: "scheduled task \(task.identifier) belongs to unknown app \(task.app)")
            }
            guard schedules[task.key] == nil else {
                throw .invalidArgument(name: "snapshot", reason: "scheduled task \(task.identifier) of \(task.app) appears twice")
            }
            schedules[task.key] = task
            apps.records[slot].scheduled.append(task.identifier)
        }
        scheduleIndex.rebuild(from: schedules)
        nextScheduleDue = scheduleIndex.earliest(in: schedules)
        var highest: UInt64 = 0
        for n in pending.sorted(by: { $0.id < $1.id }) {
            guard let slot = apps.slot(of: n.app) else {
                throw .invalidArgument(name: "snapshot", reason: "notification \(n.id) belongs to unknown app \(n.app)")
            }
            guard notifications[n.id] == nil else {
                throw .invalidArgument(name: "snapshot", reason: "notification \(n.id) appears twice")
            }
            notifications[n.id] = n
            apps.records[slot].pendingNotifications.append(n.id)
            highest = max(highest, n.id.rawValue)
        }
        // Never reused: past every stored id even if the counter was stored behind them.
        nextNotificationNumber = max(nextNotification, highest &+ 1, 1)
    }
}

/// Read-only views for the daemon, which decides when to wake whom.
extension LifecycleEngine {
    /// The app's scheduled tasks due by `until` (earliestBegin at or before it), earliest first,
    /// leaving out any whose identifier is being handled in an open wake (a resubmission made
    /// while handling it waits for the item to close).
    public func dueTasks(of app: AppID, until: Timestamp) -> [ScheduledTask] {
        guard let record = apps[app] else { return [] }
        var due: [ScheduledTask] = []
        for identifier in record.scheduled {
            guard let task = schedules[ScheduleKey(app: app, identifier: identifier)], task.earliestBegin <= until,
                  !record.wakes.contains(where: { $0.subject == .task(identifier) }) else { continue }
            due.append(task)
        }
        due.sort { $0.earliestBegin != $1.earliestBegin ? $0.earliestBegin < $1.earliestBegin : $0.identifier < $1.identifier }
        return due
    }

    /// The app's pending notifications, oldest first.
    public func pendingNotifications(of app: AppID) -> [PendingNotification] {
        guard let record = apps[app] else { return [] }
        return record.pendingNotifications.compactMap { notifications[$0] }
    }
}
