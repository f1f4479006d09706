import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// The Varlink project's certification, both ways, with real processes: the PyPI `varlink`
/// package's client against our `varlink-certification` server, and our client against that
/// package's server. Then the server's refusals, which a certifying server must make.
@Suite("Varlink certification", .timeLimit(.minutes(2)))
struct CertificationTests {
    static var program: String { Binaries.directory + "/varlink-certification" }

    static func python(_ arguments: [String], in directory: String, timeout: Double = 60) throws -> Completed {
        try run(["/usr/bin/env", "python3"] + arguments, environment: ["PYTHONUNBUFFERED": "1"], in: directory, timeout: timeout)
    }

    /// A server process and the socket it listens on, killed when released.
    final class Server {
        let child: ChildProcess
        let socket: String

        init(_ arguments: [String], socket: String, in directory: TemporaryDirectory, label: String) throws {
            self.socket = socket
            child = try ChildProcess(arguments, environment: ["PYTHONUNBUFFERED": "1"], directory: directory.path, label: label)
            _ = waitUntil(seconds: 20) {
                child.poll() || (try? VarlinkClient(path: socket, timeout: .seconds(1))) != nil
            }
            guard child.isRunning, (try? VarlinkClient(path: socket, timeout: .seconds(1))) != nil else {
                let outcome = child.outcome
                child.killNow()
                throw TestFailure("\(label) did not listen at \(socket): \(outcome)\n--- stdout:\n\(child.stdout)\n--- stderr:\n\(child.stderr)")
            }
        }

        deinit {
            child.killNow()
        }
    }

    @Test("the Python client certifies our server")
    func pythonClientAgainstOurServer() throws {
        try Binaries.require(Self.program)
        let directory = TemporaryDirectory(prefix: "cert")
        defer { directory.remove() }
        let socket = directory.file("ours.sock")
        let server = try Server([Self.program, "--varlink=unix:" + socket], socket: socket, in: directory, label: "server")
        let result = try Self.python(["-m", "varlink.tests.test_certification", "--client", "--varlink=unix:" + socket],
                                     in: directory.path)
        #expect(result.status == 0 && result.stdout.contains("Certification passed") && result.stdout.contains("Reply number 10"),
                "\(result.summary)\n--- server stderr:\n\(server.child.stderr)")
        #expect(!server.child.poll(), "the server ended: \(server.child.outcome)")
    }

    @Test("our client certifies itself against the Python server")
    func ourClientAgainstPythonServer() throws {
        try Binaries.require(Self.program)
        let directory = TemporaryDirectory(prefix: "cert")
        defer { directory.remove() }
        let socket = directory.file("python.sock")
        let server = try Server(["/usr/bin/env", "python3", "-m", "varlink.tests.test_certification", "--varlink=unix:" + socket],
                                socket: socket, in: directory, label: "python-server")
        let result = try run([Self.program, "--client", "--varlink=unix:" + socket], in: directory.path, timeout: 60)
        #expect(result.status == 0 && result.stdout.contains("Certification passed") && result.stdout.contains("End: {\"all_ok\":true}"),
                "\(result.summary)\n--- python server stderr:\n\(server.child.stderr)")
    }

    @Test("a client out of order or with wrong values is refused; a garbage peer is closed; others are still served")
    func refusals() throws {
        try Binaries.require(Self.program)
        let directory = TemporaryDirectory(prefix: "cert")
        defer { directory.remove() }
        let socket = directory.file("ours.sock")
        let server = try Server([Self.program, "--varlink=unix:" + socket], socket: socket, in: directory, label: "server")
        let client = try VarlinkClient(path: socket, timeout: .seconds(10))
        let method = "org.varlink.certification."

        func start() throws -> JSONValue { try client.call(method + "Start")["client_id"] ?? .null }
        func errorName(_ body: () throws -> Void) -> String? {
            do { try body() } catch let error as VarlinkError { return error.name } catch { return "\(error)" }
            return nil
        }

        // Out of order: Test02 before Test01; the client id is then spent.
        var id = try start()
        #expect(errorName { _ = try client.call(method + "Test02", ["client_id": id, "bool": true]) } == method + "CertificationError")
        #expect(errorName { _ = try client.call(method + "Test01", ["client_id": id]) } == method + "ClientIdError")

        // A wrong value.
        id = try start()
        _ = try client.call(method + "Test01", ["client_id": id])
        #expect(errorName { _ = try client.call(method + "Test02", ["client_id": id, "bool": false]) } == method + "CertificationError")

        // An unknown id, an unknown method.
        #expect(errorName { _ = try client.call(method + "Test01", ["client_id": "nobody"]) } == method + "ClientIdError")
        #expect(errorName { _ = try client.call(method + "Test99", [:]) } == "org.varlink.service.MethodNotFound")

        // A peer sending garbage is closed and nobody else notices.
        let garbage = try VarlinkClient(path: socket, timeout: .seconds(5))
        try garbage.sendRaw(Array("{not json".utf8) + [0])
        let answer = try garbage.receiveMessage()
        #expect(answer["error"] != nil, "garbage got \(answer)")
        #expect(errorName { _ = try garbage.receiveMessage() } != nil, "the garbage connection stays open")
        #expect((try? start())?.stringValue?.count == 32)
        #expect(!server.child.poll(), "the server ended: \(server.child.outcome)")
    }

    @Test("a flood of pipelined Start calls from a peer that does not read is bounded")
    func floodingPeer() throws {
        try Binaries.require(Self.program)
        let directory = TemporaryDirectory(prefix: "cert")
        defer { directory.remove() }
        let socket = directory.file("ours.sock")
        let server = try Server([Self.program, "--varlink=unix:" + socket], socket: socket, in: directory, label: "server")
        let flooder = try VarlinkClient(path: socket, timeout: .milliseconds(200))
        let call = VarlinkCall(method: "org.varlink.certification.Start").encoded()
        let batch = Array([[UInt8]](repeating: call, count: 1000).joined())
        var sent = 0
        let deadline = Deadline(seconds: 20)
        // The server drops the peer once its unread replies pass the limit; sending then fails.
        while !deadline.hasPassed {
            do { try flooder.sendRaw(batch) } catch { break }
            sent += 1
        }
        #expect(!deadline.hasPassed, "the server kept accepting \(sent) batches from a peer that never reads")
        let other = try VarlinkClient(path: socket, timeout: .seconds(5))
        #expect(try other.call("org.varlink.certification.Start")["client_id"] != nil)
        let resident = Self.residentBytes(server.child.pid)
        #expect(resident > 0 && resident < 64 << 20, "server resident memory \(resident) bytes after the flood")
    }

    /// VmRSS from /proc/PID/status, in bytes (0 when unreadable).
    static func residentBytes(_ pid: pid_t) -> Int {
        let status = readTextFile("/proc/\(pid)/status")
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        let kib = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kib * 1024
    }
}
