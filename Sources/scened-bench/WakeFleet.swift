import Glibc
import Varlink

/// Part 2 of `scened-bench wake`: apps attached over io.scened.App (this process's connections,
/// one epoll loop, no scene each), that schedule refresh tasks and complete each one the moment
/// performBackgroundTask arrives, as an app with nothing to fetch would. Every event is noted
/// with its seq, so that the wakes and the number of apps awake at once come from the engine's
/// own order, not from when this process happened to read each connection.
final class WakeFleet {
    let apps: [String]
    var count: Int { apps.count }

    /// Per app, since `startMeasuring`: wakes (`resumed` with cause background), tasks handed
    /// (performBackgroundTask), completions answered, expirations (backgroundTaskWillExpire).
    private(set) var wakes: [Int]
    private(set) var handed: [Int]
    private(set) var completed: [Int]
    private(set) var expirations = 0
    /// Per app: whether its last process event was `suspended`.
    private(set) var suspended: [Bool]
    /// +1 at a wake's `resumed`, −1 at the `suspended` that ends it, by seq.
    private(set) var awakeChanges: [(seq: Int64, delta: Int)] = []
    /// When (monotonic s) the first performBackgroundTask was read, the last completion's
    /// reply read; the last `suspended`'s event time (µs since the epoch).
    private(set) var firstHanded = 0.0
    private(set) var lastCompleted = 0.0
    private(set) var lastSuspendedTime: Int64 = 0
    /// GetStatus.background.wakingApps, sampled while measuring.
    private(set) var wakingSamples: [Int] = []
    private(set) var scheduleReplies = 0

    private var measuring = false
    private var awake: [Bool]
    private var messages: [Int]
    private var failures: [String] = []
    private let streams: [FramedConnection]
    private let calls: [FramedConnection]
    private let control: FramedConnection
    private var statusInFlight = false
    private var lastSample = 0.0
    private let poller: BenchPoller
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    private var unflushed: [Int] = []

    private static let resumed = Array("resumed".utf8)
    private static let suspendedName = Array("suspended".utf8)
    private static let perform = Array("performBackgroundTask".utf8)
    private static let willExpire = Array("backgroundTaskWillExpire".utf8)
    private static let background = Array(#""cause":"background""#.utf8)
    private static let identifier = Array(#""identifier":""#.utf8)
    private static let wakingApps = Array(#""wakingApps":"#.utf8)

    init(socket: String, count: Int) throws {
        apps = (0..<count).map { "com.example.wake\($0)" }
        let zeros = Array(repeating: 0, count: count), no = Array(repeating: false, count: count)
        wakes = zeros
        handed = zeros
        completed = zeros
        messages = zeros
        suspended = no
        awake = no
        poller = try BenchPoller()
        control = try FramedConnection(socket: socket)
        calls = try apps.map { _ in try FramedConnection(socket: socket) }
        streams = try apps.map { _ in try FramedConnection(socket: socket) }
        for (i, stream) in streams.enumerated() {
            try poller.add(stream.fd, token: i)
            stream.queue(VarlinkCall(method: "io.scened.App.Attach", parameters: ["app": .string(apps[i])], more: true).encoded())
            guard stream.flush() else { throw BenchError("the daemon closed an attach connection") }
        }
        for (i, c) in calls.enumerated() { try poller.add(c.fd, token: count + i) }
        try poller.add(control.fd, token: 2 * count)
    }

    /// Every app attached (Attached, didFinishLaunching) and suspended for idling.
    func attachAll(timeout: Double) throws {
        try pump(timeout: timeout, "attaching and idling") { !suspended.contains(false) }
    }

    /// Each app schedules refresh tasks "refresh<k>" due at `due[k]` (µs since the epoch).
    func schedule(due: [Int64], timeout: Double) throws {
        for i in apps.indices {
            for (k, at) in due.enumerated() {
                calls[i].queue(appFrame("io.scened.App.ScheduleBackgroundTask",
                                        ["app": .string(apps[i]), "identifier": .string("refresh\(k)"),
                                         "kind": "refresh", "earliestBegin": .int(at)]))
            }
            unflushed.append(i)
        }
        try flushCalls()
        try pump(timeout: timeout, "scheduling") { scheduleReplies == count * due.count }
    }

    /// From now on events count, and GetStatus is sampled every `sampleInterval` seconds.
    func startMeasuring(sampleInterval: Double) {
        measuring = true
        self.sampleInterval = sampleInterval
    }

    private var sampleInterval = 0.01

    /// Largest number of apps awake at once, in the engine's order of events.
    var peakAwake: Int { peak(of: awakeChanges) }

    // MARK: - The loop

    func pump(timeout: Double, _ what: String, until done: () -> Bool) throws {
        let deadline = now() + timeout
        while !done() {
            guard now() < deadline else {
                throw BenchError("\(what): not done within \(timeout) s (wakes \(wakes.reduce(0, +)), handed \(handed.reduce(0, +)), completed \(completed.reduce(0, +)), suspended \(suspended.filter { $0 }.count) of \(count))")
            }
            try pumpOnce(milliseconds: 1)
        }
    }

    private func pumpOnce(milliseconds: Int32) throws {
        var ready: [Int] = []
        poller.wait(milliseconds: milliseconds) { ready.append($0) }
        for token in ready {
            let t = now()
            if token < count {
                if !streams[token].read(&scratch, { m in streamMessage(token, m, t) }) {
                    poller.remove(streams[token].fd)
                    failures.append("\(apps[token])'s attach stream closed")
                }
            } else if token < 2 * count {
                let i = token - count
                if !calls[i].read(&scratch, { m in callReply(i, m, t) }) {
                    poller.remove(calls[i].fd)
                    failures.append("\(apps[i])'s call connection closed")
                }
            } else if !control.read(&scratch, { m in statusReply(m) }) {
                poller.remove(control.fd)
                failures.append("the control connection closed")
            }
        }
        if measuring && !statusInFlight && now() - lastSample >= sampleInterval { try sampleStatus() }
        try flushCalls()
        if let first = failures.first { throw BenchError("\(first) (\(failures.count) failures)") }
    }

    private func streamMessage(_ i: Int, _ m: UnsafeRawBufferPointer, _ t: Double) {
        if Scan.isError(m) {
            failures.append("\(apps[i])'s Attach ended: \(String(decoding: m.prefix(300), as: UTF8.self))")
            return
        }
        messages[i] += 1
        let seq = Scan.integer(Scan.seq, in: m) ?? 0
        if Scan.named(Self.suspendedName, in: m) {
            suspended[i] = true
            if awake[i] {
                awake[i] = false
                awakeChanges.append((seq, -1))
                lastSuspendedTime = max(lastSuspendedTime, Scan.integer(Scan.time, in: m) ?? 0)
            }
        } else if Scan.named(Self.resumed, in: m) {
            suspended[i] = false
            if measuring && Scan.after(Self.background, in: m) != nil {
                wakes[i] += 1
                awake[i] = true
                awakeChanges.append((seq, 1))
            }
        } else if Scan.named(Self.perform, in: m) {
            handed[i] += 1
            if firstHanded == 0 { firstHanded = t }
            guard let task = Scan.string(Self.identifier, in: m) else {
                failures.append("\(apps[i]): a performBackgroundTask without identifier")
                return
            }
            calls[i].queue(Array(#"{"method":"io.scened.App.CompleteBackgroundTask","parameters":{"app":"\#(apps[i])","identifier":"\#(task)","success":true}}"#.utf8) + [0])
            unflushed.append(i)
        } else if Scan.named(Self.willExpire, in: m) {
            expirations += 1
        }
    }

    private func callReply(_ i: Int, _ m: UnsafeRawBufferPointer, _ t: Double) {
        if Scan.isError(m) {
            failures.append("\(apps[i])'s call was refused: \(String(decoding: m.prefix(300), as: UTF8.self))")
            return
        }
        if measuring {
            completed[i] += 1
            lastCompleted = t
        } else {
            scheduleReplies += 1
        }
    }

    private func sampleStatus() throws {
        control.queue(appFrame("io.scened.Manager.GetStatus", [:]))
        guard control.flush() else { throw BenchError("the daemon closed the control connection") }
        statusInFlight = true
        lastSample = now()
    }

    private func statusReply(_ m: UnsafeRawBufferPointer) {
        statusInFlight = false
        guard !Scan.isError(m), let n = Scan.integer(Self.wakingApps, in: m) else {
            failures.append("GetStatus gave no background.wakingApps: \(String(decoding: m.prefix(300), as: UTF8.self))")
            return
        }
        wakingSamples.append(Int(n))
    }

    private func flushCalls() throws {
        for i in unflushed where calls[i].hasOutput {
            guard calls[i].flush() else { throw BenchError("the daemon closed \(apps[i])'s call connection") }
        }
        unflushed.removeAll(keepingCapacity: true)
    }
}

/// The largest running sum of `changes` taken in seq order.
func peak(of changes: [(seq: Int64, delta: Int)]) -> Int {
    var level = 0, highest = 0
    for change in changes.sorted(by: { $0.seq < $1.seq }) {
        level += change.delta
        highest = max(highest, level)
    }
    return highest
}
