// store-crash-writer PATH full|normal: the writer side of SceneStoreTests' kill -9 test
// (StoreCrashTests). Opens the store, loads what is there, and from the commit after the last
// one stored commits batch after batch of background work, writing "ack N" to stdout once
// commit N has returned, until it is killed. The batches are a function of N alone, so the
// test knows what every commit holds (StoreCrashTests.Model). Test-only.
import Glibc
import SceneCore
import SceneStore

let alpha = AppID("org.crash.alpha")!
let beta = AppID("org.crash.beta")!

func fail(_ message: String) -> Never {
    let line = "store-crash-writer: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(1)
}

/// Notification n: sizes from a few bytes to beyond a page, so some rows spill into overflow
/// pages that a torn write would leave half-written.
func notification(_ n: UInt64) -> PendingNotification {
    let pad = String(repeating: "p", count: Int(n * 7919 % 6000))
    return PendingNotification(id: NotificationID(n), app: n % 2 == 1 ? alpha : beta,
                               payload: #"{"n":\#(n),"pad":"\#(pad)"}"#, priority: n % 3 == 0 ? .high : .normal,
                               queuedAt: Timestamp(microseconds: Int64(n)))
}

/// Commit c: queues notifications 3c-2...3c, delivers (removes) those of commit c-2, schedules
/// alpha's task "t(c mod 5)" (replacing it every fifth commit), cancels "t((c+3) mod 5)", and
/// sets alpha's active modes to c mod 16.
func batch(_ c: UInt64) -> StoreBatch {
    let time = Timestamp(microseconds: Int64(c))
    let modes = BackgroundModes(rawValue: UInt8(c % 16))
    return StoreBatch(
        apps: [AppRecord(id: alpha, process: .running, pendingDiscards: [], idleSince: nil, backgroundEnteredAt: nil,
                         launchedAt: nil, launches: 1, baseFootprint: 0, activeModes: modes),
               AppRecord(id: beta)],
        schedules: [ScheduledTask(app: alpha, identifier: "t\(c % 5)", kind: c % 2 == 0 ? .refresh : .processing,
                                  earliestBegin: time, submittedAt: time)],
        removedSchedules: [ScheduleKey(app: alpha, identifier: "t\((c + 3) % 5)")],
        notifications: (3 * c - 2...3 * c).map(notification),
        removedNotifications: c > 2 ? (3 * (c - 2) - 2...3 * (c - 2)).map(NotificationID.init) : [],
        counters: EngineCounters(clock: time, nextSequence: 1, nextSessionNumber: 1, nextTaskNumber: 1,
                                 nextNotificationNumber: 3 * c + 1))
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let durability = arguments[2] == "full" ? Durability.full : arguments[2] == "normal" ? .normal : nil
else { fail("usage: store-crash-writer PATH full|normal") }
do {
    let store = try SceneStore(path: arguments[1], durability: durability)
    let stored = try store.load()
    var c = (stored.nextNotificationNumber - 1) / 3
    while true {
        c += 1
        try store.commit(batch(c))
        let line = "ack \(c)\n"
        let written = line.withCString { write(1, $0, strlen($0)) }
        guard written == line.utf8.count else { fail("writing the acknowledgement of commit \(c): errno \(errno)") }
    }
} catch {
    fail("\(error)")
}
