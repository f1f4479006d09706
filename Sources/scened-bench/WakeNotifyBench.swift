import Glibc
import ProcessKit
import Varlink

// Part 1 of `scened-bench wake`: Notify to a suspended, frozen app → its notification handler
// running, against the kernel's own floor for the same step (WakeFigures.swift prints both).

/// The samples of part 1, seconds.
struct NotifySamples {
    /// Notify written → the probe's handler running (its own clock).
    var handler: [Double] = []
    /// Notify written → the probe's wait for the event ended (its poll returned).
    var woken: [Double] = []
    /// Notify written → the didReceiveNotification event made (the daemon's event time).
    var made: [Double] = []
    /// Notify written → its reply read.
    var replied: [Double] = []
    /// The handler running → cgroup.events `frozen 1` again (Acknowledge, suspend, freeze).
    var refrozen: [Double] = []
    /// cgroup.freeze=0 written → the floor process's answer (its own clock), and → the bench's
    /// read of it.
    var floor: [Double] = []
    var floorSeen: [Double] = []
    var cgroup = ""
    var floorCgroup = ""
    var daemonSlack = "?"
}

final class NotifyBench {
    static let app = "org.example.wake-probe"
    let rounds: Int
    let directory: String
    let daemon: BenchDaemon
    private var offset = 0.0

    let durability: String

    init(rounds: Int, directory: String, durability: String) {
        self.rounds = rounds
        self.durability = durability
        self.directory = directory
        daemon = BenchDaemon(binary: binary, directory: directory)
    }

    static let suspendDelay = "100ms"

    /// Alternating rounds: the kernel's floor, then Notify to the probe (frozen between
    /// rounds), so that both meet the same moments of the machine's other work.
    func run() throws -> NotifySamples {
        var samples = NotifySamples()
        let floor = try FreezeFloor(directory: directory)
        defer { floor.end() }
        samples.floorCgroup = floor.cgroup.path
        let fifo = directory + "/probe.fifo"
        try makeFifo(fifo)
        let reader = try LineReader(fifo: fifo)
        mkdir(directory + "/apps.d", 0o755)
        try writeFile(directory + "/apps.d/\(Self.app).conf", "[Launch]\nExecStart=\(benchBinary) wake-probe \(fifo)\n")
        offset = wallOffset()
        try daemon.start(config: config(durability: durability) + """

            [Lifecycle]
            SuspendDelaySec=\(Self.suspendDelay)
            """)
        defer { daemon.stopWithin(10) }
        samples.daemonSlack = timerSlack(of: daemon.pid)
        let control = try TimedConnection(socket: daemon.socket)
        let next = try control.call("GetStatus").reply["status"]?["nextSeq"]?.intValue ?? 0
        let log = try EventLog(socket: daemon.socket, since: next)
        let watch = try warmUp(control, reader)
        samples.cgroup = watch.path
        for round in 0..<rounds {
            let (ran, seen) = try floor.round()
            samples.floor.append(ran)
            samples.floorSeen.append(seen)
            try notifyRound(round, control, log, reader, watch, &samples)
        }
        return samples
    }

    /// The first Notify starts the probe (scened launches it for the wake); returns the watch
    /// on its cgroup once it is frozen again.
    private func warmUp(_ control: TimedConnection, _ reader: LineReader) throws -> FreezeWatch {
        try control.call("Notify", ["app": .string(Self.app), "payload": ["round": -1]])
        _ = try reader.next(timeout: 60, "the probe's first notification (started by scened)")
        let record = try control.call("GetApp", ["app": .string(Self.app)]).reply["app"]
        guard let pid = record?["startedPid"]?.intValue, let cgroup = cgroupDirectory(of: Int32(pid)),
              cgroup.hasSuffix("/app-\(Self.app)") else {
            throw BenchError("\(Self.app) runs in no cgroup of its own: scened cannot freeze it (GetApp: \(record.map { "\($0)" } ?? "none"))")
        }
        let watch = try FreezeWatch(cgroup: cgroup)
        _ = try awaitFrozen(watch, "the probe frozen after its first notification")
        return watch
    }

    private func notifyRound(_ round: Int, _ control: TimedConnection, _ log: EventLog, _ reader: LineReader,
                             _ watch: FreezeWatch, _ samples: inout NotifySamples) throws {
        let mark = log.events.count
        let sent = try control.send("Notify", ["app": .string(Self.app), "payload": ["round": .int(Int64(round))]])
        let (reply, repliedAt) = try control.next(timeout: 30, "Notify")
        try TimedConnection.check(reply, "Notify")
        let (line, _) = try reader.next(timeout: 30, "the probe's handler (round \(round))")
        let fields = line.split(separator: " ")
        guard fields.count == 3, let ran = Double(fields[0]), let seq = Int64(fields[1]), let woken = Double(fields[2]) else {
            throw BenchError("the probe wrote \"\(line)\"")
        }
        let frozenAt = try awaitFrozen(watch, "the probe frozen again (round \(round))")
        // The event the probe handled, which must be this round's: the log may still hold
        // earlier rounds' events it had not read when the round began.
        let event = try log.first(from: mark, "didReceiveNotification seq \(seq)") { $0.seq == seq }
        guard event.app == Self.app, event.name == "didReceiveNotification" else {
            throw BenchError("round \(round): the probe handled seq \(seq), which is \(event.name) of \(event.app)")
        }
        samples.handler.append(ran - sent)
        samples.woken.append(woken - sent)
        samples.replied.append(repliedAt - sent)
        samples.made.append(Double(event.time) / 1e6 - offset - sent)
        samples.refrozen.append(frozenAt - ran)
        // scened finishes its pass (the suspension's commit) before the next round.
        usleep(5_000)
    }

    /// When `frozen 1` showed, looking every 200 µs: this wait is not a measured figure, and
    /// a tighter one would take a CPU from scened and the probe meanwhile.
    private func awaitFrozen(_ watch: FreezeWatch, _ what: String) throws -> Double {
        let deadline = now() + 30
        while watch.frozen() != true {
            if now() > deadline { throw BenchError("not within 30 s: \(what)") }
            usleep(200)
        }
        return now()
    }

}

/// The kernel's floor for a thaw that delivers a message: a process of ours (`wake-echo`) in a
/// scratch cgroup, blocked reading a FIFO; each round freezes it, writes a byte to the FIFO,
/// then cgroup.freeze=0 → its answer.
final class FreezeFloor {
    let cgroup: Cgroup
    private let answers: LineReader
    private let feed: Int32
    private let process: SpawnedProcess
    private let watch: FreezeWatch

    init(directory: String) throws {
        guard let own = Cgroup.own() else { throw BenchError("no cgroup v2 hierarchy for the kernel's floor") }
        let path = own + "/wake-floor"
        do { cgroup = try Cgroup.create(path) } catch { throw BenchError("scratch cgroup \(path): \(error)") }
        let input = directory + "/floor-in", output = directory + "/floor-out"
        try makeFifo(input)
        try makeFifo(output)
        answers = try LineReader(fifo: output)
        // Read and write: opening never waits for the child, and the child's open does not either.
        feed = open(input, O_RDWR | O_CLOEXEC)
        guard feed >= 0 else { throw BenchError("open \(input): \(errnoText())") }
        do {
            process = try ProcessSpawner.spawn(LaunchSpec(executable: benchBinary, arguments: [benchBinary, "wake-echo", input, output],
                                                          environment: ["PATH=/usr/bin:/bin"], cgroup: path))
        } catch {
            close(feed)
            throw BenchError("spawn wake-echo: \(error)")
        }
        watch = try FreezeWatch(cgroup: path)
        try poke()
        _ = try answers.next(timeout: 10, "wake-echo's first answer")
    }

    private func poke() throws {
        var byte: UInt8 = 1
        guard write(feed, &byte, 1) == 1 else { throw BenchError("write to wake-echo: \(errnoText())") }
    }

    /// One round: cgroup.freeze=0 written → the answer's own time, and → the bench's read of it.
    func round() throws -> (ran: Double, seen: Double) {
        usleep(5_000)
        do { try cgroup.freeze() } catch { throw BenchError("freeze \(cgroup.path): \(error)") }
        let deadline = now() + 10
        while watch.frozen() != true {
            if now() > deadline { throw BenchError("wake-echo not frozen within 10 s") }
            usleep(200)
        }
        try poke()
        let t0 = now()
        do { try cgroup.thaw() } catch { throw BenchError("thaw \(cgroup.path): \(error)") }
        let (line, seen) = try answers.next(timeout: 10, "wake-echo's answer")
        guard let ran = Double(line) else { throw BenchError("wake-echo wrote \"\(line)\"") }
        return (ran - t0, seen - t0)
    }

    /// Its input closed, the cgroup killed, the process reaped, the cgroup removed.
    func end() {
        close(feed)
        try? cgroup.kill()
        try? cgroup.thaw()
        var pfd = pollfd(fd: process.pidfd, events: Int16(POLLIN), revents: 0)
        _ = poll(&pfd, 1, 5000)
        _ = ProcessSpawner.reap(pidfd: process.pidfd)
        close(process.pidfd)
        let deadline = now() + 5
        while rmdir(cgroup.path) != 0 && errno == EBUSY && now() < deadline { usleep(1_000) }
    }
}

/// This binary (the probe and the floor process are modes of it).
let benchBinary: String = {
    var buffer = [Int8](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    return n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
}()
