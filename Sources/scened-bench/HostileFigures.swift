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

    // The bystander runs on its own thread; it counts while the connections are filled and
    // held. It is closed only after the idle CPU is measured: on a daemon that wedges when a
    // client closes with a call in flight, its own close would otherwise be the abuse measured.
    let bystander = Shared((calls: 0.0, seconds: 0.0, stalled: false, failure: String?.none))
    let counting = Shared(false)
    let client = UncheckedBox(try SequentialClient(socket: daemon.socket, app: "com.example.bystander"))
    let measuring = BenchThread { thread in
        do {
            while !thread.shouldStop {
                let r = try client.value.rate(over: 0.5)
                if counting.value { bystander.update { $0.calls += r.perSecond * 0.5; $0.seconds += 0.5 } }
                if r.stalled {
                    bystander.update { $0.stalled = true }
                    return
                }
            }
        } catch {
            bystander.update { $0.failure = "\(error)" }
        }
    }
    defer { measuring.stop() }

    let payload = Array(#"{"method":"io.scened.Manager.GetStatus","parameters":{"pad":""#.utf8)
        + [UInt8](repeating: UInt8(ascii: "a"), count: 1_048_000)
    var fds: [Int32] = []
    defer { for fd in fds { close(fd) } }
    var connectFailure: String?
    for _ in 0..<count {
        do { fds.append(try benchConnect(daemon.socket)) } catch {
            connectFailure = "\(error)"
            break
        }
    }
    var sent = [Int](repeating: 0, count: fds.count)
    var gone = [Bool](repeating: false, count: fds.count)
    counting.set(true)
    let start = now()
    // Round-robin without waiting on any one: the daemon may stop reading some.
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
    let fillTime = now() - start
    usleep(2_000_000)
    let peak = daemon.peakResidentBytes()
    let rss = daemon.residentBytes()
    counting.set(false)
    let b = bystander.value
    let during = b.calls / max(b.seconds, 0.5)

    // What the daemon told those it let go.
    var refused = 0
    var closed = 0
    var buffer = [UInt8](repeating: 0, count: 4096)
    for i in fds.indices {
        // Read to the end of what is there: a refusal is a reply and then EOF, and one read
        // that stops at the reply never sees the close (it undercounted "let go").
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
    let megabytes = sent.reduce(0, +) >> 20
    say("\(fds.count) connections each holding an unterminated message of 1,048,000 bytes (\(megabytes) MiB sent in \(ms(fillTime)), then held 2 s)\(connectFailure.map { "; connect failed: \($0)" } ?? ""):")
    say("    peak RSS \(mb(peak)) (target < 256 MiB) \(verdict(peak < 256 << 20)); RSS while held \(mb(rss))")
    say("    connections the daemon let go: \(closed) (\(refused) of them with LimitExceeded)")
    // The bystander stops first: idle means no client at all (it ran on, and was measured as
    // the daemon's idle load, until this was noticed).
    measuring.stop()
    for fd in fds { close(fd) }
    fds.removeAll()
    let idle = daemon.cpuPercent(over: 2)
    say("    idle CPU after they closed: \(idle)% (target < 5 %) \(verdict(idle < 5))")
    // Its rate alone again, after: against the mean of before and after, as the monitors'
    // figure is, the machine's drift over the run cancels (against "before" alone, one fast
    // second before the abuse read as a loss of share).
    let after = try probe.rate(over: seconds).perSecond
    let mean = (alone + after) / 2
    let ratio = during / max(mean, 1)
    say("    bystander \(Int(during.rounded())) calls/s against \(Int(mean.rounded())) alone (\(Int(alone.rounded())) before, \(Int(after.rounded())) after): \(twoDigits(ratio)) (target ≥ 0.50) \(verdict(ratio >= 0.5)); against before only \(twoDigits(during / max(alone, 1)))\(b.stalled ? "; a call went unanswered for 5 s" : "")\(b.failure.map { "; failed: \($0)" } ?? "")")
}

/// Hands a non-Sendable value to one other thread, which alone uses it until it is joined.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// 20 clients send GetStatus and close at once (the wedge found on main).
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
