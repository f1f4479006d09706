import Glibc
import Varlink

/// One ListSessions (more) as the bench times it: from just before the call is sent to the
/// first reply and to the last one.
struct ListingRun {
    var sessions = 0
    var batches = 0
    var firstBatch = 0.0
    var total = 0.0
}

/// ListSessions with `more`, replies framed and their sessions counted, not parsed: what the
/// daemon takes to stream the listing, with as little of the client's own work as can be.
func listFramed(_ daemon: BenchDaemon) throws -> ListingRun {
    let fd = try UnixSocket.connect(path: daemon.socket)
    defer { close(fd) }
    var run = ListingRun()
    let bytes = VarlinkCall(method: "io.scened.Manager.ListSessions", parameters: [:], more: true).encoded()
    // Replies are at most a listing piece (256 KiB and a session): a partial one always fits.
    let size = 4 << 20
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    defer { buffer.deallocate() }
    // A session object begins `{"id":"s`: counting those counts sessions without parsing.
    // memchr and memcmp, not a loop over bytes, so that the client's reading costs little
    // beside the daemon's writing.
    let marker = Array(#"{"id":"s"#.utf8)
    // A reply that goes on ends `"continues":true}`; the last one does not.
    let tail = Array(#""continues":true}"#.utf8)
    // Bytes of a reply not complete yet, at the start of `buffer`.
    var partial = 0
    let start = now()
    try bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            guard n > 0 else { throw BenchError("send: \(errnoText())") }
            offset += n
        }
    }
    while true {
        guard partial < size else { throw BenchError("a reply of more than \(size) bytes") }
        let n = recv(fd, buffer + partial, size - partial, 0)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { throw BenchError("the daemon closed the listing") }
        let end = buffer + partial + n
        var p = buffer
        // Whole replies only: a marker is never cut.
        while let nul = memchr(p, 0, end - p) {
            var q = p
            while let brace = memchr(q, Int32(UInt8(ascii: "{")), nul - q) {
                if nul - brace >= marker.count && memcmp(brace, marker, marker.count) == 0 { run.sessions += 1 }
                q = brace + 1
            }
            run.batches += 1
            if run.batches == 1 { run.firstBatch = now() - start }
            if nul - p < tail.count || memcmp(nul - tail.count, tail, tail.count) != 0 {
                run.total = now() - start
                return run
            }
            p = nul + 1
        }
        partial = end - p
        if partial > 0 && p != buffer { memmove(buffer, p, partial) }
    }
}

/// ListSessions with `more` through VarlinkClient, every reply parsed: what a client such as
/// scenectl pays on top.
func listParsed(_ daemon: BenchDaemon) throws -> ListingRun {
    let client = try VarlinkClient(path: daemon.socket)
    var run = ListingRun()
    let start = now()
    try client.callMore("io.scened.Manager.ListSessions", [:]) { reply in
        run.batches += 1
        if run.batches == 1 { run.firstBatch = now() - start }
        run.sessions += reply["sessions"]?.arrayValue?.count ?? 0
        return true
    }
    run.total = now() - start
    return run
}

/// The listing figure beside its target (100,000 sessions streamed in ≤ 100 ms), the
/// median of a few runs since one run is at the mercy of the machine's other work.
func listingLine(_ daemon: BenchDaemon, count: Int, runs: Int = 5) throws -> String {
    var framed: [ListingRun] = []
    var parsed: [ListingRun] = []
    var daemonCPU = 0.0
    for _ in 0..<runs {
        let cpu = daemon.cpuSeconds()
        framed.append(try listFramed(daemon))
        daemonCPU += daemon.cpuSeconds() - cpu
        parsed.append(try listParsed(daemon))
    }
    framed.sort { $0.total < $1.total }
    parsed.sort { $0.total < $1.total }
    let f = framed[runs / 2]
    let p = parsed[runs / 2]
    guard f.sessions == count, p.sessions == count else {
        throw BenchError("ListSessions listed \(f.sessions) (framed) and \(p.sessions) (parsed) of \(count) sessions")
    }
    var line = "ListSessions (more) with \(count) sessions: \(ms(f.total)) to the last reply, first batch after \(ms(f.firstBatch)), \(f.batches) replies"
    if count == 100_000 { line += " (target ≤ 100 ms)" }
    line += "; daemon CPU \(ms(daemonCPU / Double(runs))) a listing; parsed by VarlinkClient: \(ms(p.total)) (median of \(runs))"
    return line
}

/// `scened-bench list`: only the listing figures, for working on them.
func listingFigures() throws {
    let dir = makeDirectory()
    defer { removeTree(dir) }
    let daemon = BenchDaemon(binary: binary, directory: dir)
    try daemon.start(config: config(durability: "off"))
    defer { daemon.stop() }
    say("\n== listing (Durability=off, LogLevel=notice) ==")
    _ = try createSessions(daemon, count: 10_000)
    say(try listingLine(daemon, count: 10_000))
    let created = try createSessions(daemon, count: sessionCount - 10_000, firstApp: 10_000)
    say("(created \(sessionCount - 10_000) more sessions in \(ms(created)))")
    let runs = option("--runs", 5)
    say(try listingLine(daemon, count: sessionCount, runs: runs))
}
