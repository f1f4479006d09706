import Glibc
import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// A writer process (Tests/StoreCrashWriter) commits background work and is killed with
/// SIGKILL at seeded random moments: while it opens the store, between commits, inside one.
/// After each kill the store, reopened, holds exactly the state of the last acknowledged commit
/// or of the one after it (committed, not yet acknowledged): every committed notification is
/// there with its payload whole, no delivered one is back, no commit is half there.
@Suite("Store: kill -9 of a writer", .serialized)
struct StoreCrashTests {
    static let kills = 30

    /// What commit `k` of the writer leaves stored, worked out here from the writer's rules
    /// (see its main.swift), not by running its code.
    struct Model {
        static let alpha = AppID("org.crash.alpha")!
        static let beta = AppID("org.crash.beta")!

        static func notifications(after k: UInt64) -> [PendingNotification] {
            guard k > 0 else { return [] }
            return (3 * max(k, 2) - 5...3 * k).map { n in
                PendingNotification(id: NotificationID(n), app: n % 2 == 1 ? alpha : beta,
                                    payload: #"{"n":\#(n),"pad":"\#(String(repeating: "p", count: Int(n * 7919 % 6000)))"}"#,
                                    priority: n % 3 == 0 ? .high : .normal, queuedAt: Timestamp(microseconds: Int64(n)))
            }
        }

        static func schedules(after k: UInt64) -> [ScheduledTask] {
            var table: [String: ScheduledTask] = [:]
            for c in UInt64(1)...max(k, 1) where k > 0 {
                let time = Timestamp(microseconds: Int64(c))
                table["t\(c % 5)"] = ScheduledTask(app: alpha, identifier: "t\(c % 5)", kind: c % 2 == 0 ? .refresh : .processing,
                                                   earliestBegin: time, submittedAt: time)
                table["t\((c + 3) % 5)"] = nil
            }
            return table.values.sorted { $0.key < $1.key }
        }
    }

    @Test("seeded kill -9 of a store writer: every committed notification is there, none half-written")
    func killNineBetweenAndDuringCommits() throws {
        // SCENED_STORE_CRASH_SEED=N repeats a run.
        let seed = getenv("SCENED_STORE_CRASH_SEED").flatMap { UInt64(String(cString: $0)) }
            ?? UInt64(monotonicNanoseconds() ^ UInt64(getpid()) << 32)
        var rng = SplitMix64(seed: seed)
        let writer = try Binaries.require(Binaries.directory + "/store-crash-writer")
        let started = monotonicNanoseconds()
        try withTemporaryDirectory { dir in
            let path = dir.file("scened.db")
            var lastAck: UInt64 = 0
            var committedUnacknowledged = 0
            var startupKills = 0
            for cycle in 0..<Self.kills {
                let context = "seed \(seed), cycle \(cycle)"
                let durability = cycle % 2 == 0 ? "full" : "normal"
                let child = try ChildProcess([writer, path, durability], directory: dir.path, label: "writer-\(cycle)",
                                             stdoutPipe: true)
                func acknowledged(_ line: String) throws {
                    guard line.hasPrefix("ack "), let n = UInt64(line.dropFirst(4)), n == lastAck + 1 else {
                        throw TestFailure("\(context): after ack \(lastAck) the writer wrote \"\(line)\"")
                    }
                    lastAck = n
                }
                if rng.below(6) == 0 {
                    // During start-up: the open, the replay of the log, the load.
                    usleep(useconds_t(rng.below(20_000)))
                    startupKills += 1
                } else {
                    // Some commits acknowledged first, then a moment anywhere in the stream.
                    let wanted = 1 + rng.below(12)
                    var seen = 0
                    while seen < wanted, let line = child.readLine(seconds: 30) {
                        try acknowledged(line)
                        seen += 1
                    }
                    try #require(seen == wanted, "\(context): the writer stopped (\(child.outcome)): \(child.stderr)")
                    usleep(useconds_t(rng.below(30_000)))
                }
                try #require(child.isRunning, "\(context): the writer ended by itself (\(child.outcome)): \(child.stderr)")
                child.killNow()
                // Every acknowledgement written before the kill.
                while let line = child.readLine(seconds: 5) { try acknowledged(line) }
                let k = try check(path, durability: durability == "full" ? .full : .normal, lastAck: lastAck,
                                  context: context)
                if k > lastAck { committedUnacknowledged += 1 }
                lastAck = k
            }
            let seconds = Double(monotonicNanoseconds() - started) / 1e9
            print("store crash test seed \(seed): \(Self.kills) kills (\(startupKills) during start-up), \(lastAck) commits, "
                  + "\(committedUnacknowledged) found committed but unacknowledged, \(seconds) s")
            #expect(lastAck >= UInt64(Self.kills), "too few commits to prove much: \(lastAck)")
        }
    }

    /// Opens the image the kill left, as the next writer would, and returns the commit it holds.
    private func check(_ path: String, durability: Durability, lastAck: UInt64, context: String) throws -> UInt64 {
        let store = try SceneStore(path: path, durability: durability)
        defer { store.close() }
        let stored = try store.loadChecked()
        let snapshot = stored.snapshot
        guard stored.quarantined.isEmpty else { throw TestFailure("\(context): quarantined \(stored.quarantined)") }
        let k = (snapshot.nextNotificationNumber - 1) / 3
        try #require(k == lastAck || k == lastAck + 1,
                     "\(context): the store holds commit \(k), but \(lastAck) was the last acknowledged")
        // The first difference ends the test: later cycles would only repeat it.
        func require(_ holds: Bool, _ what: @autoclosure () -> String) throws {
            if !holds { throw TestFailure("\(context), commit \(k): \(what())") }
        }
        let notifications = Model.notifications(after: k)
        try require(snapshot.notifications.map(\.id) == notifications.map(\.id),
                    "notifications \(snapshot.notifications.map(\.id)), expected \(notifications.map(\.id))")
        for (found, expected) in zip(snapshot.notifications, notifications) where found != expected {
            try require(false, "notification \(found.id) is \(found.app) \(found.priority) at \(found.queuedAt) with "
                            + "\(found.payload.utf8.count) bytes of payload, expected \(expected.app) \(expected.priority) "
                            + "at \(expected.queuedAt) with \(expected.payload.utf8.count)")
        }
        try require(snapshot.schedules == Model.schedules(after: k),
                    "schedules \(snapshot.schedules.map(\.identifier)), expected \(Model.schedules(after: k).map(\.identifier))")
        try require(snapshot.apps.map(\.id) == (k > 0 ? [Model.alpha, Model.beta] : []), "apps \(snapshot.apps.map(\.id))")
        try require(snapshot.apps.first.map { $0.activeModes.rawValue == UInt8(k % 16) } ?? (k == 0),
                    "alpha's modes are [\(snapshot.apps.first?.activeModes ?? [])]")
        try require(k == 0 || snapshot.clock == Timestamp(microseconds: Int64(k)), "the clock is \(snapshot.clock)")
        let integrity = try store.integrityCheck()
        try require(integrity == ["ok"], "integrity_check: \(integrity)")
        return k
    }
}
