import Glibc
import ScenedTestSupport
import SystemdKit
import Testing

extension ProcessGlobalStateTests {
    /// Parsing for this process needs fds 3, 4, … that are really ours, which a test process
    /// running other suites in parallel can't promise; so the positive cases run in a fresh
    /// child started by systemd-socket-activate (ListenFDChild below answers on the socket).
    @Suite struct ListenFDTests {
        static let activator = "/usr/bin/systemd-socket-activate"

        /// Activates this test binary in the ListenFDChild role on sockets `names` and returns
        /// what it reports over the first one.
        func activate(sockets count: Int, fdNames: String?) throws -> String {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            var arguments = [Self.activator]
            for index in 0..<count { arguments += ["-l", directory.file("socket\(index)")] }
            if let fdNames { arguments.append("--fdname=\(fdNames)") }
            arguments += ["-E", "SYSTEMDKIT_CHILD_ROLE=listen-fds"]
            arguments += Binaries.thisTestBinary(filter: "ListenFDChild")
            let child = try ChildProcess(arguments, directory: directory.path, label: "activator")

            // The activator execs the binary on the first connection.
            var connection: Int32 = -1
            for _ in 0..<500 {
                connection = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                if withUnixAddress(directory.file("socket0"), { connect(connection, $0, $1) }) == 0 { break }
                close(connection)
                connection = -1
                usleep(10_000)
            }
            var reply = ""
            if connection >= 0 {
                var timeout = timeval(tv_sec: 20, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var buffer = [UInt8](repeating: 0, count: 1024)
                let n = read(connection, &buffer, buffer.count)
                if n > 0 { reply = String(decoding: buffer[..<n], as: UTF8.self) }
                close(connection)
            }
            let status = child.finish(within: 30)
            #expect(status == 0, "activated test binary failed:\n\((child.stdout + child.stderr).suffix(3000))")
            return reply
        }

        @Test(.enabled(if: access(activator, X_OK) == 0, "needs systemd-socket-activate"))
        func namedSocketsFromSocketActivation() throws {
            #expect(try activate(sockets: 2, fdNames: "varlink:admin")
                == "3:varlink:listener,4:admin:listener env=unset")
        }

        @Test(.enabled(if: access(activator, X_OK) == 0, "needs systemd-socket-activate"))
        func socketWithoutNameHasNilName() throws {
            #expect(try activate(sockets: 1, fdNames: nil) == "3:-:listener env=unset")
        }

        @Test func nothingForAnotherProcess() {
            // sd_listen_fds checks LISTEN_PID before it looks at any fd.
            withEnvironment(["LISTEN_FDS": "1", "LISTEN_PID": "1", "LISTEN_FDNAMES": "varlink"]) {
                #expect(ServiceManager.listenFDs(unsetEnvironment: false) == [])
            }
            withEnvironment(["LISTEN_FDS": nil, "LISTEN_PID": nil, "LISTEN_FDNAMES": nil]) {
                #expect(ServiceManager.listenFDs() == [])
            }
        }

        @Test func recognisesUnixStreamListeners() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            defer { close(listener) }
            #expect(withUnixAddress(directory.file("s"), { bind(listener, $0, $1) }) == 0)
            #expect(ServiceManager.isUnixStreamListener(listener) == false) // bound, not listening yet
            #expect(listen(listener, 8) == 0)
            #expect(ServiceManager.isUnixStreamListener(listener))

            let pair = SocketPair()
            defer { pair.close() }
            #expect(ServiceManager.isUnixStreamListener(pair.left) == false)
            let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            defer { close(datagram) }
            #expect(ServiceManager.isUnixStreamListener(datagram) == false)
            var fds: [Int32] = [-1, -1]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            #expect(ServiceManager.isUnixStreamListener(fds[0]) == false)
        }
    }
}

/// Runs only inside a test binary started by ListenFDTests through systemd-socket-activate.
@Suite struct ListenFDChild {
    @Test(.enabled(if: childRole == "listen-fds")) func reportListenFDs() throws {
        let fds = ServiceManager.listenFDs()
        let environment = getenv("LISTEN_FDS") == nil && getenv("LISTEN_PID") == nil ? "unset" : "set"
        let report = fds.map { fd in
            "\(fd.fd):\(fd.name ?? "-"):\(ServiceManager.isUnixStreamListener(fd.fd) ? "listener" : "other")"
        }.joined(separator: ",") + " env=\(environment)"
        let first = try #require(fds.first)
        // Answer on the connection that activated us.
        let connection = accept(first.fd, nil, nil)
        try #require(connection >= 0)
        writeString(connection, report)
        close(connection)
    }
}
