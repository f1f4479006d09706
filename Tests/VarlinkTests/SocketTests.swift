import Glibc
import ScenedTestSupport
import Testing
@testable import Varlink

/// Everything that creates socket nodes. Serialized because `UnixSocket.listen` briefly changes
/// the process-wide umask, which would disturb parallel tests that create files.
@Suite(.serialized) struct SocketTests {}

extension SocketTests {
    @Suite struct UnixSocketTests {
        @Test func listenCreatesParentsAndAppliesMode() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/run/scened/io.example.scened"
            let fd = try UnixSocket.listen(path: path, mode: 0o600)
            defer { close(fd) }
            var info = stat()
            #expect(lstat(path, &info) == 0)
            #expect(info.st_mode & S_IFMT == S_IFSOCK)
            #expect(info.st_mode & 0o777 == 0o600)
            #expect(fcntl(fd, F_GETFL) & O_NONBLOCK != 0)
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)

            let open = dir.path + "/open"
            let openFD = try UnixSocket.listen(path: open)
            defer { close(openFD) }
            #expect(lstat(open, &info) == 0 && info.st_mode & 0o777 == 0o666)
        }

        @Test func replacesAStaleSocketButNotALiveOne() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/sock"
            let first = try UnixSocket.listen(path: path)
            #expect(throws: SocketError.addressInUse(path: path)) { try UnixSocket.listen(path: path) }
            close(first)
            // The node is still there, but nobody listens: stale, so it is replaced.
            var info = stat()
            #expect(lstat(path, &info) == 0)
            let second = try UnixSocket.listen(path: path)
            close(second)
        }

        @Test func refusesToReplaceANonSocket() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/file"
            close(open(path, O_CREAT | O_WRONLY, 0o644))
            #expect(throws: SocketError.notASocket(path: path)) { try UnixSocket.listen(path: path) }
            #expect(SocketError.notASocket(path: path).errno == EEXIST)
        }

        @Test func checksPathLength() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let fits = dir.path + "/" + String(repeating: "a", count: 107 - dir.path.utf8.count - 1)
            #expect(fits.utf8.count == 107)
            close(try UnixSocket.listen(path: fits))
            let tooLong = fits + "b"
            let error = SocketError.pathTooLong(path: tooLong, byteCount: 108)
            #expect(throws: error) { try UnixSocket.listen(path: tooLong) }
            #expect(throws: error) { try UnixSocket.connect(path: tooLong) }
            #expect(error.errno == ENAMETOOLONG)
            #expect(error.message == "\(tooLong): socket path is 108 bytes, the limit is 107")
        }

        @Test func connectErrorsNameThePath() {
            let path = "/nonexistent-varlink-dir/sock"
            #expect(throws: SocketError.system(operation: "connect", path: path, errno: ENOENT)) { try UnixSocket.connect(path: path) }
            #expect(SocketError.system(operation: "connect", path: path, errno: ENOENT).message == "\(path): connect failed: No such file or directory")
            #expect(SocketError.addressInUse(path: path).description == "\(path): another process is already serving on this socket")
        }

        @Test func acceptsNonBlockingCloseOnExecConnectionsWithCredentials() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/sock"
            let listener = try UnixSocket.listen(path: path)
            defer { close(listener) }
            #expect(try UnixSocket.accept(listener) == nil)

            let client = try UnixSocket.connect(path: path)
            defer { close(client) }
            #expect(waitFor(listener, Int16(POLLIN)))
            let server = try #require(try UnixSocket.accept(listener))
            defer { close(server) }
            #expect(fcntl(server, F_GETFL) & O_NONBLOCK != 0)
            #expect(fcntl(server, F_GETFD) & FD_CLOEXEC != 0)
            #expect(fcntl(client, F_GETFL) & O_NONBLOCK == 0)
            #expect(fcntl(client, F_GETFD) & FD_CLOEXEC != 0)

            let credentials = try #require(UnixSocket.peerCredentials(server))
            #expect(credentials.pid == getpid())
            #expect(credentials.uid == getuid())
            #expect(credentials.gid == getgid())
            #expect(UnixSocket.peerCredentials(-1) == nil)
        }

        @Test func nonBlockingReadsAndWrites() throws {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            defer { close(fds[0]) }
            var buffer = [UInt8](repeating: 0, count: 16)

            let emptyRead = buffer.withUnsafeMutableBytes { UnixSocket.readNonBlocking(fds[0], into: $0) }
            #expect(emptyRead == .wouldBlock)
            let zero = buffer.withUnsafeMutableBytes { UnixSocket.readNonBlocking(fds[0], into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<0])) }
            #expect(zero == .bytes(0))

            let written = Array("hello".utf8).withUnsafeBytes { UnixSocket.writeNonBlocking(fds[1], $0) }
            #expect(written == .bytes(5))
            let read = buffer.withUnsafeMutableBytes { UnixSocket.readNonBlocking(fds[0], into: $0) }
            #expect(read == .bytes(5))
            #expect(Array(buffer[0..<5]) == Array("hello".utf8))

            close(fds[1])
            let closed = buffer.withUnsafeMutableBytes { UnixSocket.readNonBlocking(fds[0], into: $0) }
            #expect(closed == .closed)
            // Writing to a vanished peer reports .closed rather than raising SIGPIPE.
            let toClosed = Array("x".utf8).withUnsafeBytes { UnixSocket.writeNonBlocking(fds[0], $0) }
            #expect(toClosed == .closed)
            let bad = Array("x".utf8).withUnsafeBytes { UnixSocket.writeNonBlocking(-1, $0) }
            #expect(bad == .error(EBADF))
        }

        @Test func writeReportsWouldBlockWhenTheBufferIsFull() {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let chunk = [UInt8](repeating: 7, count: 64 << 10)
            var sawWouldBlock = false
            for _ in 0..<1000 {
                if chunk.withUnsafeBytes({ UnixSocket.writeNonBlocking(fds[1], $0) }) == .wouldBlock {
                    sawWouldBlock = true
                    break
                }
            }
            #expect(sawWouldBlock)
        }
    }
}
