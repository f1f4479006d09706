import Glibc

/// 4,000 connections that connect and never send, beside the sequential bystander (one call in
/// flight, so each of its calls is a commit of its own): a connection that does nothing must
/// cost nothing per commit: a commit's events must reach the monitors without a walk over every
/// connection, which at one commit per call would be paid thousands of times a second.
func idleConnections() throws {
    let count = 4000
    let limit = raiseOpenFiles(to: 2 * count + 512)
    guard limit >= count + 256 else {
        say("4000 idle connections: skipped, RLIMIT_NOFILE is only \(limit)")
        return
    }
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    try daemon.start(config: limitsConfig(["MaxConnections=8192", "MaxConnectionsPerUser=8192"]))
    defer { daemon.stopWithin(10) }
    let probe = try SequentialClient(socket: daemon.socket, app: "com.example.polite")
    _ = try probe.rate(over: 0.3)

    /// Calls per second and the daemon's CPU per call over one period.
    func measure() throws -> (perSecond: Double, cpuPerCall: Double, stalled: Bool) {
        let cpu0 = daemon.cpuSeconds()
        let r = try probe.rate(over: seconds)
        let cpu = daemon.cpuSeconds() - cpu0
        return (r.perSecond, cpu / max(r.perSecond * seconds, 1), r.stalled)
    }
    let alone = try measure()
    var fds: [Int32] = []
    defer { for fd in fds { close(fd) } }
    var connectFailure: String?
    for _ in 0..<count {
        do { fds.append(try benchConnect(daemon.socket)) } catch {
            connectFailure = "\(error)"
            break
        }
    }
    // Every one accepted before the measurement (the daemon accepts a few per pass beside load).
    usleep(500_000)
    let rss = daemon.residentBytes()
    let during = try measure()
    for fd in fds { close(fd) }
    fds = []
    usleep(300_000)
    let after = alone.stalled ? alone : try measure()
    let mean = (alone.perSecond + after.perSecond) / 2
    let ratio = during.perSecond / max(mean, 1)
    let cpuAlone = (alone.cpuPerCall + after.cpuPerCall) / 2
    say("\(count) idle connections (connected, never sending)\(connectFailure.map { "; connect failed: \($0)" } ?? ""), beside the bystander (one commit per call):")
    say("    bystander \(Int(during.perSecond.rounded())) calls/s against \(Int(mean.rounded())) alone (\(Int(alone.perSecond.rounded())) before, \(Int(after.perSecond.rounded())) after): \(twoDigits(ratio)) (target ≥ 0.80: an idle connection costs nothing per commit; the rate alone drifts by a tenth between before and after) \(verdict(ratio >= 0.8))\(during.stalled ? "; a call went unanswered for 5 s" : "")")
    say("    daemon CPU per call \(us(during.cpuPerCall)) against \(us(cpuAlone)) alone; RSS with them \(mb(rss))")
}
