import Glibc
import ScenedTestSupport
import SystemdKit
import Testing

extension ProcessGlobalStateTests {
    /// Parsing for this process needs fds 3, 4, … that are really ours, which a test process
    /// running other suites in parallel can't promise; so the positive cases run in a fresh
    /// process started by systemd-socket-activate: systemdkit-probe in its listen-fds role
    /// (Tests/SystemdKitProbe/ListenFDCheck.swift) answers on the socket.
    @Suite struct ListenFDTests {
        static let activator = "/usr/bin/systemd-socket-activate"

        /// Activates systemdkit-probe (listen-fds) on `count` sockets and returns what it reports
        /// over the first one; expects it to report its check ok.
        func activate(sockets count: Int, fdNames: String?,
                      sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
            let probe = try Binaries.require(Binaries.systemdkitProbe)
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            var arguments = [Self.activator]
            for index in 0..<count { arguments += ["-l", directory.file("socket\(index)")] }
            if let fdNames { arguments.append("--fdname=\(fdNames)") }
            arguments += [probe, "listen-fds"]
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
            #expect(status == 0, "activated systemdkit-probe ended with \(child.outcome):\n\((child.stdout + child.stderr).suffix(3000))",
                    sourceLocation: sourceLocation)
            expectProbeReported(["reportListenFDs"], stdout: child.stdout, diagnostics: child.stderr,
                                sourceLocation: sourceLocation)
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
