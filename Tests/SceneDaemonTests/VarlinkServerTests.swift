import Glibc
import ScenedTestSupport
import SystemdKit
import Testing
import Varlink
@testable import SceneDaemon

/// The server in-process, on real sockets: the test plays both the daemon (it runs the passes
/// and decides when a batch "commits") and its clients, so every interleaving of a hang-up and
/// a commit can be placed exactly.
@Suite("VarlinkServer in-process", .serialized)
final class VarlinkServerTests {
    let directory = TemporaryDirectory()
    let loop: EventLoop
    let server: VarlinkServer
    var batch: UInt64 = 1 {
        didSet { server.currentBatch = batch }
    }
    let service = EchoService()

    /// Answers every call with its method name, in the batch being gathered.
    final class EchoService: ConnectionService {
        var batch: UInt64 = 1
        var handled: [String] = []

        func handle(_ call: VarlinkCall, on conn: ClientConnection) {
            handled.append(call.method)
            guard !call.oneway else { return }
            conn.hold(batch: batch) { w in
                w.beginObject()
                w.key("parameters")
                w.beginObject()
                w.key("method")
                w.string(call.method)
                w.endObject()
                w.endObject()
            }
        }

        func produce(_ conn: ClientConnection) {}
    }

    var handled: [String] { service.handled }

    init() throws {
        _ = ignoreSIGPIPE
        loop = try EventLoop()
        let path = directory.file("sock")
        let fd = try UnixSocket.listen(path: path, mode: 0o600)
        var limits = ConnectionLimits()
        limits.maxConnectionsPerUser = 3
        server = try VarlinkServer(loop: loop, listenFD: fd, path: path, limits: limits)
        try server.start(inbox: LoopInbox())
    }

    deinit {
        server.closeAll()
        directory.remove()
    }

    func client() throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let rc = withUnixAddress(server.path) { connect(fd, $0, $1) }
        try #require(rc == 0)
        server.acceptPending()
        return fd
    }

    func send(_ fd: Int32, _ method: String, oneway: Bool = false) {
        let bytes = VarlinkCall(method: method, parameters: [:], oneway: oneway).encoded()
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The client hangs up. shutdown first: other tests in this process start processes, and
    /// a child holds a copy of every descriptor between its fork and its exec, so close alone
    /// may not reach the server before the next pass (a CI failure of hangUpWhileHeld).
    func hangUp(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    /// One pass as the daemon runs it, without a commit.
    func pass() {
        server.beginPass()
        service.batch = batch
        server.serve(service)
        server.enforceGlobalLimits()
        server.flush()
    }

    /// The batch being gathered commits; the next one begins.
    func commit() {
        server.settle(through: batch, failure: nil)
        batch += 1
        server.batchBegan()
        server.flush()
    }

    /// Messages waiting for the client (non-blocking); nil at EOF with nothing read.
    func receive(_ fd: Int32, waitMilliseconds: Int32 = 200) -> [String]? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, waitMilliseconds) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard n > 0 else { return n == 0 ? nil : [] }
        return buffer[0..<n].split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// After everything settled: nothing is left to do, so the loop would sleep.
    func expectIdle(_ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
        pass()
        #expect(!server.hasWork, "\(context): the server still has work after settling", sourceLocation: sourceLocation)
        #expect(server.unsentTotal == 0, "\(context): \(server.unsentTotal) bytes still unsent", sourceLocation: sourceLocation)
        #expect(server.connections.values.allSatisfy { !$0.hasHeldReplies }, "\(context): replies still held", sourceLocation: sourceLocation)
    }

    @Test("hang-up before the call is read: the call still runs, the connection closes, nothing is left")
    func hangUpBeforeRead() throws {
        let fd = try client()
        send(fd, "org.test.Call")
        hangUp(fd)
        pass()
        #expect(handled == ["org.test.Call"])
        #expect(server.connectionCount == 0)
        commit()
        expectIdle("hang-up before read")
    }

    @Test("hang-up while the reply waits for its commit (the first release's wedge)")
    func hangUpWhileHeld() throws {
        let fd = try client()
        send(fd, "org.test.Call")
        pass()
        #expect(handled == ["org.test.Call"])
        hangUp(fd)
        pass()                       // the commit is still "in flight"
        #expect(server.connectionCount == 0, "closed before its batch committed")
        commit()
        expectIdle("hang-up while held")
    }

    @Test("hang-up after the commit, before the reply is written: EPIPE ends it")
    func hangUpAfterCommit() throws {
        let fd = try client()
        send(fd, "org.test.Call")
        pass()
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        commit()                     // release and write: the peer is gone
        pass()
        #expect(server.connectionCount == 0)
        expectIdle("hang-up after commit")
    }

    @Test("a bystander gets every reply while others hang up around it")
    func bystander() throws {
        let reader = try client()
        for round in 0..<50 {
            let quitter = try client()
            send(quitter, "org.test.Quit\(round)")
            send(reader, "org.test.Read\(round)")
            if round % 3 == 0 { hangUp(quitter) }
            pass()
            if round % 3 == 1 { hangUp(quitter) }
            commit()
            if round % 3 == 2 { hangUp(quitter) }
            let got = receive(reader) ?? []
            #expect(got.count == 1 && got.first?.contains("org.test.Read\(round)") == true, "round \(round): \(got)")
        }
        pass()
        #expect(server.connectionCount == 1)
        hangUp(reader)
        pass()
        expectIdle("bystander")
    }

    @Test("half-close: the replies of calls sent before it still arrive, then EOF")
    func halfClose() throws {
        let fd = try client()
        send(fd, "org.test.One")
        send(fd, "org.test.Two")
        shutdown(fd, Int32(SHUT_WR))
        pass()
        #expect(handled == ["org.test.One", "org.test.Two"])
        commit()
        let got = receive(fd) ?? []
        #expect(got.count == 2, "\(got)")
        pass()
        #expect(receive(fd) == nil, "EOF after the replies")
        close(fd)
        expectIdle("half-close")
    }

    @Test("over MaxConnectionsPerUser: the first call is answered LimitExceeded, then EOF; a slot freed admits again")
    func perUserLimit() throws {
        let held = try (0..<3).map { _ in try client() }
        let extra = try client()
        send(extra, "org.test.Call")
        pass()
        let got = receive(extra) ?? []
        #expect(got.first?.contains("io.scened.Manager.LimitExceeded") == true && got.first?.contains("MaxConnectionsPerUser") == true, "\(got)")
        pass()
        #expect(receive(extra) == nil, "closed after the error")
        close(extra)
        #expect(!handled.contains("org.test.Call"), "a refused client's call is never run")
        hangUp(held[0])
        // The hang-up frees the slot once a pass has seen it; under a sanitizer on a loaded
        // machine that can take more than one pass.
        let before = server.connections.count
        for _ in 0..<50 where server.connections.count >= before {
            pass()
            usleep(2_000)
        }
        #expect(server.connections.count == before - 1, "the closed connection's slot was freed")
        let again = try client()
        send(again, "org.test.Again")
        for _ in 0..<50 where !handled.contains("org.test.Again") {
            pass()
            usleep(2_000)
        }
        commit()
        #expect(receive(again)?.first?.contains("org.test.Again") == true)
        for fd in held.dropFirst() + [again] { close(fd) }
        pass()
        expectIdle("per-user limit")
    }

    @Test("a message left unfinished is cut off after IdleTimeoutSec; an idle connection is not")
    func idleTimeout() throws {
        server.limits.idleTimeout = 100_000
        let stuck = try client()
        let idle = try client()
        _ = Array(#"{"method":"org.test.Ha"#.utf8).withUnsafeBytes { Glibc.send(stuck, $0.baseAddress, $0.count, 0) }
        pass()
        #expect(server.partialTotal > 0)
        usleep(250_000)
        server.tickClocks()
        server.flush()
        let got = receive(stuck) ?? []
        #expect(got.first?.contains("IdleTimeoutSec") == true, "\(got)")
        #expect(server.partialTotal == 0)
        pass()
        #expect(receive(stuck) == nil)
        send(idle, "org.test.StillHere")
        pass()
        commit()
        #expect(receive(idle)?.first?.contains("org.test.StillHere") == true)
        close(stuck)
        close(idle)
        pass()
        expectIdle("idle timeout")
    }
}
