import Glibc
import Locking
import SceneControl
import ScenedTestSupport
import Testing
import Varlink

/// A stand-in for scened on a temporary socket: each call is handed to `script`, which answers
/// through the `Peer` (as many replies as it likes, blocking as it likes) and returns false to
/// hang up. Serves one client at a time, on its own thread.
final class ScriptedDaemon: Sendable {
    typealias Script = @Sendable (VarlinkCall, Peer) -> Bool

    let directory = TemporaryDirectory()
    let path: String
    private let listenFD: Int32
    private let script: Script
    private let stopping = Shared(false)
    private let thread = Locked<TestThread?>(nil)
    /// Every call received, in order.
    let calls = Shared<[VarlinkCall]>([])

    init(_ script: @escaping Script) throws {
        path = directory.path + "/io.scened.Manager"
        listenFD = try UnixSocket.listen(path: path)
        self.script = script
        let started = TestThread { [self] in serve() }
        thread.withLock { $0 = started }
    }

    /// Stops accepting, waits for the server thread, removes the socket.
    func stop() {
        stopping.update { $0 = true }
        thread.withLock { $0 }?.join()
        close(listenFD)
        directory.remove()
    }

    private func serve() {
        while !stopping.value {
            var entry = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) == 1, let accepted = try? UnixSocket.accept(listenFD) else { continue }
            // Blocking from here on: the script may take its time between replies.
            _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) & ~O_NONBLOCK)
            serveClient(Peer(fd: accepted))
            close(accepted)
        }
    }

    private func serveClient(_ peer: Peer) {
        var connection = VarlinkConnection()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopping.value {
            var entry = pollfd(fd: peer.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) == 1 else { continue }
            let n = recv(peer.fd, &buffer, buffer.count, 0)
            guard n > 0 else { return }
            connection.receive(Array(buffer[..<n]))
            while case .call(let call) = connection.nextCall() {
                calls.update { $0.append(call) }
                guard script(call, peer) else { return }
            }
        }
    }
}

/// The server's side of one connection.
struct Peer: Sendable {
    let fd: Int32

    func reply(_ parameters: JSONObject, continues: Bool = false) {
        send(VarlinkReply(parameters: parameters, continues: continues).encoded())
    }

    func fail(_ error: VarlinkError) {
        send(error.encoded())
    }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }
}

/// A context that talks to a real socket, captures output, and runs in UTC at `testNow`.
func liveContext(out: CapturedOutput, err: CapturedOutput, shouldStop: @escaping () -> Bool = { false }) -> Context {
    Context(out: out, err: err, connect: { path, timeout in try VarlinkClient(path: path, timeout: timeout) },
            now: { testNow }, utc: true, shouldStop: shouldStop)
}
