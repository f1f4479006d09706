import Glibc
import Varlink

/// Memory, a bystander's service and idle CPU while clients abuse the daemon: Monitors that
/// never read, thousands of half-sent messages, thousands of idle connections, clients that close right after their call.
func hostileFigures() throws {
    say("\n== hostile: abusive clients (Durability=off, LogLevel=notice; targets: peak RSS < 256 MiB, bystander ≥ 0.50 of its rate alone, idle CPU < 5 %) ==")
    say("bystander: the sequential well-behaved client of the fairness figures (one call in flight, Activate/Background on its own session)")
    try neverReadingMonitors()
    try heldPartialMessages()
    try idleConnections()
    try closedRightAfterTheCall()
}

func verdict(_ ok: Bool) -> String { ok ? "ok" : "MISSED" }

/// 100 Monitors that never read (4 KiB receive buffers) while 100,000 transitions happen, and
/// beside it the same transitions with no monitor: what the monitors cost the bystander apart
/// from the driver's own competition.
func neverReadingMonitors() throws {
    let control = try monitorRun(monitors: 0)
    let loaded = try monitorRun(monitors: 100)
    let run = loaded.counts
    say("100 Monitors that never read, during \(run.calls) transitions (1 connection, 64 in flight, \(ms(run.seconds))):")
    say("    daemon CPU \(ms(loaded.cpu)) against \(ms(control.cpu)) with no monitor")
    say("    peak RSS \(mb(loaded.peak)) (target < 256 MiB) \(verdict(loaded.peak < 256 << 20)); RSS after \(mb(loaded.rssAfter))")
    say("    bystander \(Int(loaded.during.rounded())) calls/s against \(Int(loaded.alone.rounded())) alone (before and after): \(twoDigits(loaded.ratio)) (target ≥ 0.50) \(verdict(loaded.ratio >= 0.5))\(loaded.stalled ? "; a call went unanswered for 5 s" : "")")
    say("    the same transitions with no monitor (\(ms(control.counts.seconds))): bystander \(Int(control.during.rounded())) calls/s against \(Int(control.alone.rounded())) alone: \(twoDigits(control.ratio)); with the monitors \(twoDigits(loaded.ratio / max(control.ratio, 0.01))) of that")
    say("    monitors still connected after: \(loaded.monitorsLeft) of 100\(run.failure.map { "; the driver stopped: \($0)" } ?? "")")
    say("    idle CPU after the monitors closed: \(loaded.idle)% (target < 5 %) \(verdict(loaded.idle < 5))")
}

struct MonitorRun {
    var counts: AbuseCounts
    var alone: Double
    var during: Double
    var ratio: Double { during / max(alone, 1) }
    var stalled: Bool
    /// The daemon's CPU time while the driver ran (and the bystander's last period), seconds.
    var cpu: Double
    var peak: Int
    var rssAfter: Int
    var monitorsLeft: Int
    var idle: Int
}

/// `monitors` Monitors that never read while a pipelined client makes 100,000 transitions; a
/// sequential bystander's rate during, against its rate alone (the mean of before and after).
func monitorRun(monitors count: Int) throws -> MonitorRun {
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    try daemon.start(config: config(durability: "off"))
    defer { daemon.stopWithin(10) }
    _ = try createSessions(daemon, count: 1000)
    let polite = try SequentialClient(socket: daemon.socket, app: "com.example.polite")
    _ = try polite.rate(over: 0.3)
    let alone = try polite.rate(over: seconds).perSecond

    let subscribe = VarlinkCall(method: "io.scened.Manager.Monitor", parameters: [:], more: true).encoded()
    var monitors: [Int32] = []
    defer { for fd in monitors { close(fd) } }
    for _ in 0..<count {
        let fd = try benchConnect(daemon.socket, receiveBuffer: 4096)
        _ = subscribe.withUnsafeBytes { sendSome(fd, $0) }
        monitors.append(fd)
    }
    let status = try VarlinkClient(path: daemon.socket, timeout: .seconds(10))
    let deadline = now() + 10
    while now() < deadline, (try status.call("io.scened.Manager.GetStatus")["status"]?["connections"]?.intValue ?? 0) < count + 2 {
        usleep(10_000)
    }

    var script: [[UInt8]] = []
    for k in 1...1000 {
        script.append(frame("Activate", ["session": .string("s\(k)")]))
        script.append(frame("Background", ["session": .string("s\(k)")]))
    }
    let counts = Shared(AbuseCounts())
    let cpuBefore = daemon.cpuSeconds()
    let driver = pipelined(daemon.socket, script, window: 64, duration: 600, maxCalls: 100_000, counts: counts)
    var during = 0.0
    var periods = 0
    var stalled = false
    while !driver.finished.value {
        let r = try polite.rate(over: 1)
        during += r.perSecond
        periods += 1
        if r.stalled {
            stalled = true
            break
        }
    }
    driver.stop()
    let cpu = daemon.cpuSeconds() - cpuBefore
    let peak = daemon.peakResidentBytes()
    let left = (try? status.call("io.scened.Manager.GetStatus")["status"]?["connections"]?.intValue).flatMap { $0 } ?? -1
    let rssAfter = daemon.residentBytes()
    for fd in monitors { close(fd) }
    monitors.removeAll()
    let idle = count > 0 ? daemon.cpuPercent(over: 2) : 0
    // Alone again, after: the machine's speed drifts over seconds (another build, say), and the
    // mean of the rates either side of the load cancels some of it.
    let aloneAfter = stalled ? alone : try polite.rate(over: seconds).perSecond
    return MonitorRun(counts: counts.value, alone: (alone + aloneAfter) / 2, during: during / Double(max(periods, 1)), stalled: stalled,
                      cpu: cpu, peak: peak, rssAfter: rssAfter, monitorsLeft: Int(max(left - 2, 0)), idle: idle)
}

/// 4,000 connections each holding an unterminated message of just under 1 MiB.
func heldPartialMessages() throws {
    let count = 4000
    let limit = raiseOpenFiles(to: 2 * count + 512)
    guard limit >= count + 256 else {
        say("4000 connections holding half messages: skipped, RLIMIT_NOFILE is only \(limit)")
        return
    }
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    // Every connection admitted: what is measured is the buffered input, not the connection limits.
    try daemon.start(config: limitsConfig(["MaxConnections=8192", "MaxConnectionsPerUser=8192"]))
    defer { daemon.stopWithin(10) }
    let probe = try SequentialClient(socket: daemon.socket, app: "com.example.polite")
    _ = try probe.rate(over: 0.3)
    let alone = try probe.rate(over: seconds).perSecond

    let bystander = try Bystander(socket: daemon.socket)
    defer { bystander.thread.stop() }
    var fds: [Int32] = []
    defer { for fd in fds { close(fd) } }
    let connectFailure = openConnections(count, to: daemon.socket, into: &fds)
    bystander.counting.set(true)
    let fill = sendPartialMessages(fds)
    usleep(2_000_000)
    let peak = daemon.peakResidentBytes()
    let rss = daemon.residentBytes()
    bystander.counting.set(false)
    let b = bystander.figures.value
    let during = b.calls / max(b.seconds, 0.5)
    let (closed, refused) = connectionsLetGo(fds, gone: fill.gone)
    say("\(fds.count) connections each holding an unterminated message of 1,048,000 bytes (\(fill.sent >> 20) MiB sent in \(ms(fill.seconds)), then held 2 s)\(connectFailure.map { "; connect failed: \($0)" } ?? ""):")
    say("    peak RSS \(mb(peak)) (target < 256 MiB) \(verdict(peak < 256 << 20)); RSS while held \(mb(rss))")
    say("    connections the daemon let go: \(closed) (\(refused) of them with LimitExceeded)")
    // Idle means no client at all: the bystander's calls stop first (its connection stays
    // open, so that its close is not what is measured).
    bystander.thread.stop()
    for fd in fds { close(fd) }
    fds.removeAll()
    let idle = daemon.cpuPercent(over: 2)
    say("    idle CPU after they closed: \(idle)% (target < 5 %) \(verdict(idle < 5))")
    // Its rate alone again, after: against the mean of before and after, as the monitors'
    // figure is, the machine's drift over the run cancels.
    let after = try probe.rate(over: seconds).perSecond
    let mean = (alone + after) / 2
    let ratio = during / max(mean, 1)
    say("    bystander \(Int(during.rounded())) calls/s against \(Int(mean.rounded())) alone (\(Int(alone.rounded())) before, \(Int(after.rounded())) after): \(twoDigits(ratio)) (target ≥ 0.50) \(verdict(ratio >= 0.5)); against before only \(twoDigits(during / max(alone, 1)))\(b.stalled ? "; a call went unanswered for 5 s" : "")\(b.failure.map { "; failed: \($0)" } ?? "")")
}

/// A polite client on its own thread, counting its calls while `counting` is set. Its
/// connection is closed only when it is released: on a daemon that wedges when a client closes
/// with a call in flight, its own close would otherwise be the abuse measured.
struct Bystander {
    let figures = Shared((calls: 0.0, seconds: 0.0, stalled: false, failure: String?.none))
    let counting = Shared(false)
    let thread: BenchThread

    init(socket: String) throws {
        let client = UncheckedBox(try SequentialClient(socket: socket, app: "com.example.bystander"))
        let figures = figures, counting = counting
        thread = BenchThread { thread in
            do {
                while !thread.shouldStop {
                    let r = try client.value.rate(over: 0.5)
                    if counting.value { figures.update { $0.calls += r.perSecond * 0.5; $0.seconds += 0.5 } }
                    if r.stalled {
                        figures.update { $0.stalled = true }
                        return
                    }
                }
            } catch {
                figures.update { $0.failure = "\(error)" }
            }
        }
    }
}

/// Up to `count` connections to `socket`; the failure that stopped short, if any.
func openConnections(_ count: Int, to socket: String, into fds: inout [Int32]) -> String? {
    for _ in 0..<count {
        do { fds.append(try benchConnect(socket)) } catch { return "\(error)" }
    }
    return nil
}

/// Sends each connection a GetStatus call of 1,048,000 bytes without its terminating NUL,
/// round-robin without waiting on any one (the daemon may stop reading some), for at most 120 s.
func sendPartialMessages(_ fds: [Int32]) -> (sent: Int, gone: [Bool], seconds: Double) {
    let payload = Array(#"{"method":"io.scened.Manager.GetStatus","parameters":{"pad":""#.utf8)
        + [UInt8](repeating: UInt8(ascii: "a"), count: 1_048_000)
    var sent = [Int](repeating: 0, count: fds.count)
    var gone = [Bool](repeating: false, count: fds.count)
    let start = now()
    while now() - start < 120 {
        var progress = false
        var pending = false
        payload.withUnsafeBytes { raw in
            for i in fds.indices where !gone[i] && sent[i] < raw.count {
                guard let n = sendSome(fds[i], UnsafeRawBufferPointer(rebasing: raw[sent[i]...])) else {
                    gone[i] = true
                    continue
                }
                sent[i] += n
                if n > 0 { progress = true }
                if sent[i] < raw.count { pending = true }
            }
        }
        if !pending { break }
        if !progress { usleep(2000) }
    }
    return (sent.reduce(0, +), gone, now() - start)
}

/// What the daemon told the connections it let go: how many it closed, and how many of those
/// got a LimitExceeded reply first.
func connectionsLetGo(_ fds: [Int32], gone: [Bool]) -> (closed: Int, refused: Int) {
    var refused = 0
    var closed = 0
    var buffer = [UInt8](repeating: 0, count: 4096)
    for i in fds.indices {
        // Read to the end of what is there: a refusal is a reply and then EOF, and a read that
        // stopped at the reply would not see the close.
        var reply: [UInt8] = []
        var ended = gone[i]
        while reply.count < 1 << 16 {
            let n = buffer.withUnsafeMutableBytes { recv(fds[i], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { reply += buffer[0..<n]; continue }
            if n == 0 || errno == ECONNRESET { ended = true }
            break
        }
        if String(decoding: reply, as: UTF8.self).contains("LimitExceeded") { refused += 1 }
        if ended { closed += 1 }
    }
    return (closed, refused)
}

/// Hands a non-Sendable value to one other thread, which alone uses it until it is joined.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// 20 clients send GetStatus and close at once: the daemon must neither spin nor wedge.
func closedRightAfterTheCall() throws {
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    try daemon.start(config: config(durability: "off"))
    defer { daemon.stopWithin(5) }
    let polite = try SequentialClient(socket: daemon.socket, app: "com.example.polite")
    _ = try polite.rate(over: 0.3)
    let alone = try polite.rate(over: 1).perSecond
    let line = Array(#"{"method":"io.scened.Manager.GetStatus"}"#.utf8) + [0]
    for _ in 0..<20 {
        let fd = try benchConnect(daemon.socket)
        _ = line.withUnsafeBytes { sendSome(fd, $0) }
        close(fd)
    }
    let idle = daemon.cpuPercent(over: 2)
    let after = try polite.rate(over: 1, grace: 2)
    let ratio = after.perSecond / max(alone, 1)
    say("20 clients that send GetStatus and close at once:")
    say("    idle CPU after: \(idle)% (target < 5 %) \(verdict(idle < 5))")
    say("    bystander after: \(Int(after.perSecond.rounded())) calls/s against \(Int(alone.rounded())) before: \(twoDigits(ratio)) (target ≥ 0.50) \(verdict(ratio >= 0.5))\(after.stalled ? "; its call went unanswered" : "")")
}
