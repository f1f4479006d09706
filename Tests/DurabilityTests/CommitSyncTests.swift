import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// Durability=full runs SQLite at synchronous=NORMAL and syncs the write-ahead log itself after
/// each commit, before the replies go out. Seen from outside with strace: the fdatasync calls
/// on the -wal file, timed against each call and its reply.
@Suite("Durability: each commit's log synced before its reply", .serialized)
struct CommitSyncTests {
    /// Seconds since the epoch, as strace -ttt prints them.
    static func wallSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The fdatasync and fsync calls on the log in an `strace -f -ttt -T -y` output: when each
    /// began and ended. A call split by another thread's (`unfinished` … `resumed`) is joined.
    static func logSyncs(_ trace: String) -> [(start: Double, end: Double)] {
        var syncs: [(start: Double, end: Double)] = []
        var unfinished: [Substring: Double] = [:]
        for line in trace.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, let at = Double(fields[1]) else { continue }
            let call = fields[2]
            let duration = call.split(separator: "<").last.flatMap { Double($0.dropLast()) }
            if call.hasPrefix("fdatasync(") || call.hasPrefix("fsync(") {
                guard call.contains("-wal>") else { continue }
                if call.hasSuffix("<unfinished ...>") {
                    unfinished[fields[0]] = at
                } else if call.contains("= 0 <"), let duration {
                    syncs.append((at, at + duration))
                }
            } else if call.hasPrefix("<... fdatasync resumed>") || call.hasPrefix("<... fsync resumed>"),
                      let start = unfinished.removeValue(forKey: fields[0]), call.contains("= 0 <"), let duration {
                syncs.append((start, at + duration))
            }
        }
        return syncs
    }

    @Test("Durability=full: each of 20 changes is answered only after an fdatasync of the log that began after its call; normal: the log is not synced per commit",
          .timeLimit(.minutes(2)))
    func logSyncedBeforeEachReply() throws {
        let strace = try SystemTools.require("strace", for: "watching scened's syncs of its log")
        for durability in ["full", "normal"] {
            let workspace = try DaemonWorkspace(configuration: DaemonWorkspace.configuration(durability: durability))
            let daemon = try workspace.start()
            let client = try daemon.client()
            _ = try client.call("io.scened.Manager.Connect", ["app": "org.sync.warm", "background": true])
            let output = workspace.directory.file("strace.out")
            let tracer = try ChildProcess([strace, "-f", "-ttt", "-T", "-y", "-e", "trace=fdatasync,fsync", "-o", output,
                                           "-p", String(daemon.pid)], directory: workspace.path, label: "strace")
            defer { tracer.killNow() }
            guard waitUntil(seconds: 10, { tracer.stderr.contains("attached") || !tracer.isRunning }), tracer.isRunning else {
                throw TestFailure("strace could not attach to scened: \(tracer.stderr)")
            }
            var calls: [(sent: Double, replied: Double)] = []
            for i in 0..<20 {
                let sent = Self.wallSeconds()
                let reply = try client.call("io.scened.Manager.Connect", ["app": .string("org.sync.a\(i % 4)"), "background": true])
                calls.append((sent, Self.wallSeconds()))
                #expect(reply["session"]?["id"]?.stringValue != nil)
            }
            kill(tracer.pid, SIGINT)
            #expect(tracer.wait(seconds: 10), "strace did not detach")
            let syncs = Self.logSyncs(readTextFile(output))
            if durability == "full" {
                let unsynced = calls.indices.filter { i in
                    !syncs.contains { $0.start >= calls[i].sent && $0.end <= calls[i].replied }
                }
                #expect(unsynced.isEmpty, "replies without a sync of the log in between: \(unsynced); \(syncs.count) syncs")
            } else {
                #expect(syncs.isEmpty, "Durability=normal synced the log \(syncs.count) times in 20 commits")
            }
            try daemon.stop()
            print("Durability=\(durability): \(syncs.count) syncs of the log for 20 answered changes")
        }
    }
}
