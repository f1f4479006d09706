import Dispatch
import Foundation
import Glibc
import SceneCore
import ScenedTestSupport
import Synchronization
import Testing
import Varlink

/// Issue item 5, a full disk: the state directory is a small tmpfs in a private mount namespace
/// (held by a `sleep` so that it outlives daemon restarts, and vanishes with it). Outside the
/// namespace the tmpfs is reached through /proc/HOLDER/root.
final class TinyStateFileSystem {
    let holder: ChildProcess
    let nsenter: String
    let stateDirectory: String

    init(_ workspace: DaemonWorkspace, size: String = "2m") throws {
        let unshare = try SystemTools.require("unshare", for: "a private mount namespace for a tiny tmpfs")
        nsenter = try SystemTools.require("nsenter", for: "running scened inside the tiny tmpfs's mount namespace")
        stateDirectory = workspace.stateDirectory
        try makeDirectory(stateDirectory)
        holder = try ChildProcess(
            [unshare, "--mount", "--propagation", "private", "/bin/sh", "-c",
             #"mount -t tmpfs -o size=$1,mode=0700 tmpfs "$0" && echo mounted && exec sleep 120"#, stateDirectory, size],
            directory: workspace.path, label: "tmpfs-holder")
        guard waitUntil(seconds: 10, { holder.stdout.contains("mounted") || !holder.isRunning }), holder.isRunning else {
            holder.killNow()
            throw TestFailure("cannot mount a tmpfs in a private mount namespace (the test needs it): \(holder.outcome)\n\(holder.stderr)")
        }
    }

    deinit { holder.killNow() }

    /// Prefix for scened: it runs inside the namespace.
    var wrapper: [String] { [nsenter, "-t", String(holder.pid), "-m", "--"] }

    /// Remounts the tmpfs with a new size (its content stays).
    func resize(_ size: String) throws {
        let result = try run(wrapper + ["/bin/mount", "-o", "remount,size=\(size)", stateDirectory], in: "/tmp")
        guard result.status == 0 else { throw TestFailure("cannot resize the tmpfs: \(result.summary)") }
    }

    /// A path inside the tmpfs, as seen from outside the namespace.
    func outside(_ name: String) -> String { "/proc/\(holder.pid)/root\(stateDirectory)/\(name)" }
}

/// Issue item 5 while running: a commit that cannot be written answers the callers with
/// StorageFailure (naming the file), logs it, keeps the daemon serving, loses nothing that was
/// acknowledged, and writes succeed again once the cause is gone.
@Suite("Durability: write failures", .serialized)
struct WriteFailureTests {
    @Test("disk full while running: the caller gets StorageFailure naming the file, the daemon keeps serving, nothing acknowledged is lost, writes resume once space is back")
    func fullWhileRunning() throws {
        let workspace = try DaemonWorkspace(configuration: DaemonWorkspace.configuration(durability: "full"))
        let tmpfs = try TinyStateFileSystem(workspace)
        let database = workspace.databasePath
        let daemon = try workspace.start(wrapper: tmpfs.wrapper)
        let writer = try daemon.client()
        let other = try daemon.client()

        // Acknowledged before the disk fills: sessions in several states, with saved state.
        var acknowledged: [String: (state: String, saved: Int64?)] = [:]
        for i in 0..<12 {
            let reply = try writer.call("io.scened.Manager.Connect",
                                        ["app": .string("org.full.a\(i % 3)"), "background": .bool(i % 3 == 0),
                                         "userInfo": ["i": .int(Int64(i))]])
            let id = try #require(reply["session"]?["id"]?.stringValue)
            acknowledged[id] = (reply["session"]?["state"]?.stringValue ?? "?", nil)
            if i % 2 == 0 {
                _ = try writer.call("io.scened.Manager.SaveState",
                                    ["session": .string(id), "restoration": ["json": ["n": .int(Int64(i))]]])
                acknowledged[id]!.saved = Int64(i)
            }
        }

        let filled = try fillUntilFull(tmpfs.outside("filler"))
        #expect(filled > 0)
        // Calls until one cannot be committed; those that still fit are acknowledged like any.
        var failure: VarlinkError?
        for i in 0..<500 {
            do {
                let reply = try writer.call("io.scened.Manager.Connect",
                                            ["app": "org.full.late", "userInfo": ["pad": .string(String(repeating: "f", count: 3000)), "i": .int(Int64(i))]])
                let id = try #require(reply["session"]?["id"]?.stringValue)
                acknowledged[id] = (reply["session"]?["state"]?.stringValue ?? "?", nil)
            } catch let error as VarlinkError {
                failure = error
                break
            }
        }
        let error = try #require(failure, "500 commits succeeded on a full file system")
        print("full disk while running: \(error)")
        #expect(error.name == "io.scened.Manager.StorageFailure", "expected StorageFailure, got \(error)")
        let message = error.parameters["message"]?.stringValue ?? ""
        #expect(message.contains(database), "the StorageFailure message does not name \(database): \(message)")
        #expect(["SQLITE_FULL", "ENOSPC", "full"].contains { message.contains($0) }, "the StorageFailure message does not say the disk is full: \(message)")

        // Still serving: reads on the same and on another connection; a write from another
        // client fails the same way, with nothing half-done.
        #expect(daemon.isRunning, "scened died on a full disk: \(daemon.stderr)")
        let status = try writer.call("io.scened.Manager.GetStatus")["status"]
        #expect(status?["sessions"]?["total"]?.intValue == Int64(acknowledged.count))
        // (A small change may still fit where the failed commit had extended the log: then it
        // is acknowledged like any other and must survive.)
        let some = try #require(acknowledged.keys.sorted().first)
        do {
            _ = try other.call("io.scened.Manager.SaveState", ["session": .string(some), "restoration": ["json": ["n": 999]]])
            acknowledged[some]!.saved = 999
        } catch let e as VarlinkError {
            #expect(e.name == "io.scened.Manager.StorageFailure", "expected StorageFailure, got \(e)")
        }
        try expectSessions(acknowledged, on: other, "while the disk is full")
        // A journal entry (on stderr when not under journald) names the file.
        let stderr = daemon.stderr
        #expect(stderr.contains("Commit to \(database) failed"), "no journal entry about the failed commit:\n\(stderr)")

        // Space back: writes succeed again, and everything acknowledged is still there.
        #expect(unlink(tmpfs.outside("filler")) == 0)
        let after = try writer.call("io.scened.Manager.Connect", ["app": "org.full.after", "background": true])
        let afterID = try #require(after["session"]?["id"]?.stringValue)
        acknowledged[afterID] = ("background", nil)
        _ = try other.call("io.scened.Manager.SaveState", ["session": .string(afterID), "restoration": ["json": ["n": 1000]]])
        acknowledged[afterID]!.saved = 1000
        try expectSessions(acknowledged, on: other, "once space is back")

        // And after a restart (a crash, even).
        daemon.crash()
        let restarted = try workspace.start(wrapper: tmpfs.wrapper)
        try expectSessions(acknowledged, on: try restarted.client(), "after kill -9 and a restart")
        try restarted.stop()
        let inspector = try DatabaseInspector(directory: workspace.path)
        // Inside the namespace: SQLite resolves /proc/PID/root, so it could not open it from outside.
        #expect(try inspector.integrityCheck(database, wrapper: tmpfs.wrapper) == ["ok"])
    }

    @Test("disk full at start-up: refused with the file and the problem named, the database unchanged; starts once space is back")
    func fullAtStartup() throws {
        let workspace = try DaemonWorkspace()
        let tmpfs = try TinyStateFileSystem(workspace)
        let first = try workspace.start(wrapper: tmpfs.wrapper)
        let id = try first.call("Connect", ["app": "org.full.boot"])["session"]?["id"] ?? .null
        try first.stop()
        let before = try #require(readWholeFile(tmpfs.outside("scened.db")))
        _ = try fillUntilFull(tmpfs.outside("filler"))

        let failure = try StartupFailure(workspace, wrapper: tmpfs.wrapper)
        print("full disk at start-up: \(failure.stderr)")
        failure.expectReported(file: workspace.databasePath, problem: ["SQLITE_FULL", "ENOSPC", "disk is full", "No space left"])
        #expect(readWholeFile(tmpfs.outside("scened.db")) == before, "the database changed")

        #expect(unlink(tmpfs.outside("filler")) == 0)
        let second = try workspace.start(wrapper: tmpfs.wrapper)
        #expect(try second.call("GetSession", ["session": id])["session"]?["id"] == id)
        try second.stop()
    }

    @Test("disk full under pipelined load from several clients: each call is either acknowledged and kept, or answered StorageFailure and not applied at all")
    func fullUnderLoad() throws {
        let workspace = try DaemonWorkspace(configuration: DaemonWorkspace.configuration(durability: "normal"))
        let tmpfs = try TinyStateFileSystem(workspace)
        let inspector = try DatabaseInspector(directory: workspace.path)
        let image = workspace.directory.file("image")
        try makeDirectory(image)
        var rng = SplitMix64(seed: 0xF011)
        let clients = (0..<4).map { CrashClient(index: $0, seed: rng.next()) }
        var checker = StoredStateChecker()
        var daemon = try workspace.start(wrapper: tmpfs.wrapper)

        for client in clients {
            client.beginCycle()
            client.window = 1 + rng.below(8)
            client.storageFailureAllowed = true
        }
        let done = DispatchSemaphore(value: 0)
        for client in clients {
            let socket = workspace.socketPath
            Thread { client.runCycle(socketPath: socket); done.signal() }.start()
        }
        func failures() -> Int { clients.map { $0.storageFailures.load(ordering: .relaxed) }.reduce(0, +) }
        func applied() -> Int { clients.map { $0.changesApplied.load(ordering: .relaxed) }.reduce(0, +) }
        _ = waitUntil(seconds: 10) { applied() > 200 }
        _ = try fillUntilFull(tmpfs.outside("filler"))   // full while calls are in flight
        _ = waitUntil(seconds: 10) { failures() > 200 }
        let failedWhileFull = failures()
        let appliedWhileFull = applied()
        // Space back, and more than the load can fill before the write-ahead log is checkpointed
        // (deleting the 2 MiB filler would not do: the load fills it again with log at once).
        try tmpfs.resize("64m")
        _ = waitUntil(seconds: 10) { applied() > appliedWhileFull + 200 }
        let appliedAtEnd = applied()
        #expect(daemon.isRunning, "scened died on a full disk: \(daemon.stderr)")
        daemon.crash()
        for _ in clients {
            guard done.wait(timeout: .now() + 30) == .success else { throw TestFailure("a client thread did not notice the kill") }
        }
        let problems = clients.flatMap(\.problems)
        try #require(problems.isEmpty, "\(problems.joined(separator: "\n"))\nstderr:\n\(daemon.stderr)")
        #expect(failedWhileFull > 0, "no call failed while the disk was full")
        #expect(appliedAtEnd > appliedWhileFull, "no change succeeded once space was back")
        for message in clients.reduce(into: Set<String>(), { $0.formUnion($1.storageFailureMessages) }) {
            #expect(message.contains(workspace.databasePath), "a StorageFailure does not name the database: \(message)")
        }
        #expect(daemon.stderr.contains("Commit to \(workspace.databasePath) failed"), "no journal entry about the failed commits")

        // The image: every acknowledged change, no trace of a call answered StorageFailure.
        for suffix in ["", "-wal"] {
            unlink(image + "/scened.db" + suffix)
            try copyFile(tmpfs.outside("scened.db" + suffix), to: image + "/scened.db" + suffix)
        }
        let dump = try inspector.dump(image + "/scened.db", eventsAfter: 0)
        _ = try checker.check(dump, clients: clients, context: "after the full disk and kill -9")
        daemon = try workspace.start(wrapper: tmpfs.wrapper)
        try checker.checkRestored(daemon, context: "restart after the full disk")
        try daemon.stop()
        print("full disk under load: \(clients.map(\.acknowledgedTotal).reduce(0, +)) calls answered, \(failures()) of them StorageFailure, \(appliedAtEnd - appliedWhileFull) changes after space was back")
    }

    @Test("a write failure while running (the write-ahead log made immutable): StorageFailure naming the file, logged, still serving, nothing acknowledged lost, writes resume")
    func writeFailureWhileRunning() throws {
        let workspace = try DaemonWorkspace(configuration: DaemonWorkspace.configuration(durability: "full"))
        let database = workspace.databasePath
        let daemon = try workspace.start()
        let writer = try daemon.client()
        let reader = try daemon.client()
        var acknowledged: [String: (state: String, saved: Int64?)] = [:]
        for i in 0..<6 {
            let reply = try writer.call("io.scened.Manager.Connect", ["app": .string("org.wf.a\(i % 2)"), "background": .bool(i % 2 == 0)])
            let id = try #require(reply["session"]?["id"]?.stringValue)
            acknowledged[id] = (reply["session"]?["state"]?.stringValue ?? "?", nil)
        }
        let chattr = try SystemTools.require("chattr", for: "making the write-ahead log immutable")
        let wal = database + "-wal"
        try #require((fileSize(wal) ?? 0) > 0, "no write-ahead log while running")
        let set = try run([chattr, "+i", wal], in: workspace.path)
        try #require(set.status == 0, "chattr +i is not possible here (the test needs it): \(set.summary)")
        defer { _ = try? run([chattr, "-i", wal], in: workspace.path) }

        do {
            let reply = try writer.call("io.scened.Manager.Connect", ["app": "org.wf.late"])
            Issue.record("a change was acknowledged although its log could not be written: \(reply)")
        } catch let error as VarlinkError {
            #expect(error.name == "io.scened.Manager.StorageFailure", "expected StorageFailure, got \(error)")
            #expect(error.parameters["message"]?.stringValue?.contains(database) == true, "the message does not name \(database): \(error)")
        }
        #expect(daemon.isRunning, "scened died on a write failure: \(daemon.stderr)")
        try expectSessions(acknowledged, on: reader, "while writes fail")
        #expect(daemon.stderr.contains("Commit to \(database) failed"), "no journal entry about the failed commit:\n\(daemon.stderr)")

        #expect(try run([chattr, "-i", wal], in: workspace.path).status == 0)
        let after = try writer.call("io.scened.Manager.Connect", ["app": "org.wf.after", "background": true])
        acknowledged[try #require(after["session"]?["id"]?.stringValue)] = ("background", nil)
        try expectSessions(acknowledged, on: reader, "once writes work again")
        daemon.crash()
        let restarted = try workspace.start()
        try expectSessions(acknowledged, on: try restarted.client(), "after kill -9 and a restart")
        try restarted.stop()
    }

    private func expectSessions(_ expected: [String: (state: String, saved: Int64?)], on client: VarlinkClient,
                                _ when: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let listed = try client.call("io.scened.Manager.ListSessions")["sessions"]?.arrayValue ?? []
        var byID: [String: JSONValue] = [:]
        for s in listed { if let id = s["id"]?.stringValue { byID[id] = s } }
        #expect(byID.count == expected.count, "\(when): \(byID.count) sessions, \(expected.count) acknowledged", sourceLocation: sourceLocation)
        for (id, e) in expected.sorted(by: { $0.key < $1.key }) {
            guard let s = byID[id] else {
                Issue.record("\(when): acknowledged session \(id) is missing", sourceLocation: sourceLocation)
                continue
            }
            #expect(s["state"]?.stringValue == e.state, "\(when): \(id) is \(s["state"] ?? .null), acknowledged \(e.state)", sourceLocation: sourceLocation)
            // Listings carry no restoration data (only its size): GetSession has it.
            let got = try client.call("io.scened.Manager.GetSession", ["session": .string(id)])["session"] ?? .null
            #expect(got["restoration"]?["json"]?["n"]?.intValue == e.saved, "\(when): \(id) restoration \(got["restoration"] ?? .null), acknowledged \(e.saved.map(String.init) ?? "none")", sourceLocation: sourceLocation)
        }
    }
}
