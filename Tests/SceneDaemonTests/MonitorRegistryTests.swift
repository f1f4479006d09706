import Glibc
import ScenedTestSupport
import SystemdKit
import Testing
import Varlink
@testable import SceneDaemon

/// A publish walks only the connections with a fan-out Monitor stream (`MonitorRegistry`), not
/// every connection: the registry must follow streams as they start, change and end, and as
/// their connections close, or a monitor would miss events (left out) or a closed connection
/// would be kept alive and offered them (left in).
@Suite("MonitorRegistry", .serialized)
final class MonitorRegistryTests {
    let directory = TemporaryDirectory()
    let loop: EventLoop
    let server: VarlinkServer

    init() throws {
        _ = ignoreSIGPIPE
        loop = try EventLoop()
        let path = directory.file("sock")
        let fd = try UnixSocket.listen(path: path, mode: 0o600)
        server = try VarlinkServer(loop: loop, listenFD: fd, path: path, limits: ConnectionLimits())
        try server.start(inbox: LoopInbox())
    }

    deinit {
        server.closeAll()
        directory.remove()
    }

    func client(_ method: String, more: Bool) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let rc = withUnixAddress(server.path) { connect(fd, $0, $1) }
        try #require(rc == 0)
        server.acceptPending()
        let bytes = VarlinkCall(method: method, parameters: [:], more: more).encoded()
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return fd
    }

    func pass() {
        server.beginPass()
        server.serve(StreamOpener())
        server.enforceGlobalLimits()
        server.flush()
    }

    func visited() -> [Int] {
        var numbers: [Int] = []
        server.forEachMonitor { conn, _ in numbers.append(conn.number) }
        return numbers.sorted()
    }

    func hangUp(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    @Test("only fan-out monitors are walked; a closed one, an ended one and one turned into another stream leave")
    func followsStreams() throws {
        let plain = try client("org.test.Ping", more: false)
        let attached = try client("org.test.Attach", more: true)
        let monitors = try (0..<3).map { _ in try client("org.test.Monitor", more: true) }
        defer { ([plain, attached] + monitors).forEach(hangUp) }
        pass()
        #expect(server.connections.count == 5)
        #expect(server.monitors.count == 3, "three fan-out monitors among five connections")
        let walked = visited()
        #expect(walked.count == 3)
        #expect(walked.allSatisfy { server.connections[$0]?.stream?.isFanOutMonitor == true })

        // The client of one monitor goes away: its connection closes and leaves the registry,
        // which would otherwise keep the closed connection alive.
        hangUp(monitors[0])
        for _ in 0..<20 where server.monitors.count == 3 {
            usleep(5_000)
            pass()
        }
        #expect(server.monitors.count == 2, "a closed monitor left")
        #expect(visited().count == 2)

        // One stream ends (as when the machine cuts it off), another becomes an attached app's.
        let remaining = visited()
        try #require(remaining.count == 2)
        // Streams change through the server (an ending, or a stream replaced and reported).
        let first = try #require(server.connections[remaining[0]])
        let second = try #require(server.connections[remaining[1]])
        server.streamEnded(first)
        second.stream = .monitor(MonitorStream(liveFrom: 0, attached: true))
        server.streamChanged(second)
        #expect(server.monitors.count == 0)
        #expect(visited().isEmpty)

        // Rewriting a monitor's stream in place (as every publish does) keeps one entry.
        second.stream = .monitor(MonitorStream(liveFrom: 5))
        server.streamChanged(second)
        second.stream = .monitor(MonitorStream(liveFrom: 9))
        server.streamChanged(second)
        #expect(server.monitors.count == 1)
        #expect(visited() == [remaining[1]])
    }

    @Test("200 idle connections and a monitor: a publish walks the one monitor, not 201 connections")
    func idleConnectionsAreNotWalked() throws {
        var idle: [Int32] = []
        defer { idle.forEach(hangUp) }
        for _ in 0..<200 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let rc = withUnixAddress(server.path) { connect(fd, $0, $1) }
            try #require(rc == 0)
            idle.append(fd)
            // Accepted as they come: a listen backlog is finite.
            if idle.count % 50 == 0 { server.acceptPending(limit: 64) }
        }
        server.acceptPending(limit: 256)
        let monitor = try client("org.test.Monitor", more: true)
        defer { hangUp(monitor) }
        pass()
        #expect(server.connections.count == 201)
        #expect(server.monitors.count == 1)
        #expect(visited().count == 1)
    }

    @Test("closing every connection empties the registry")
    func closeAllEmpties() throws {
        let fds = try (0..<4).map { _ in try client("org.test.Monitor", more: true) }
        defer { fds.forEach(hangUp) }
        pass()
        #expect(server.monitors.count == 4)
        server.closeAll()
        #expect(server.monitors.count == 0)
        #expect(server.connections.isEmpty)
    }
}

/// org.test.Monitor opens a fan-out monitor, org.test.Attach an attached app's stream; anything
/// else is a plain call.
private struct StreamOpener: ConnectionService {
    func handle(_ call: VarlinkCall, on conn: ClientConnection) {
        switch call.method {
        case "org.test.Monitor": conn.stream = .monitor(MonitorStream(liveFrom: 0))
        case "org.test.Attach": conn.stream = .monitor(MonitorStream(liveFrom: 0, attached: true))
        default:
            guard !call.oneway else { return }
            conn.hold(batch: 1) { w in w.reply { _ in } }
        }
    }

    func produce(_ conn: ClientConnection) {}
}
