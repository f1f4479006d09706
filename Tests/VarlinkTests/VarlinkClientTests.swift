import Glibc
import ScenedTestSupport
import Testing
@testable import Varlink

/// A single-connection server driven by `VarlinkConnection` on the test's own thread, the way
/// the daemon drives it from its event loop.
private struct TestServer {
    static let info = VarlinkServiceInfo(
        vendor: "Example", product: "test", version: "1", url: "https://example.com",
        interfaces: [VarlinkInterfaceText(name: "io.example.test", text: "interface io.example.test\nmethod Ping(text: string) -> (text: string)\n")])

    /// Oneway `Note` texts, to check they arrived although nothing was replied.
    var notes: [String] = []
    var violations: [ProtocolViolation] = []

    /// Accepts one client and serves it until it disconnects or breaks the protocol.
    mutating func serveOneClient(_ listener: Int32) throws {
        try #require(waitFor(listener, Int16(POLLIN)), "no client connected")
        let fd = try #require(try UnixSocket.accept(listener))
        defer { close(fd) }
        var connection = VarlinkConnection()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            try #require(waitFor(fd, Int16(POLLIN)), "client went silent")
            switch buffer.withUnsafeMutableBytes({ UnixSocket.readNonBlocking(fd, into: $0) }) {
            case .bytes(let n): buffer.withUnsafeBytes { connection.receive(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            case .wouldBlock: continue
            case .closed: return
            case .error(let code): Issue.record("read failed: errno \(code)"); return
            }
            var dead = false
            loop: while true {
                switch connection.nextCall() {
                case .needMoreData: break loop
                case .call(let call): handle(call, &connection)
                case .violation(let violation):
                    violations.append(violation)
                    connection.enqueue(violation.errorReply(errorName: "io.example.test.ProtocolError"))
                    dead = true
                    break loop
                }
            }
            try flush(fd, &connection)
            if dead { return }
        }
    }

    private mutating func handle(_ call: VarlinkCall, _ connection: inout VarlinkConnection) {
        if let result = Self.info.handleServiceCall(call) {
            switch result {
            case .success(let parameters): connection.enqueue(reply: VarlinkReply(parameters: parameters))
            case .failure(let error): connection.enqueue(error: error)
            }
            return
        }
        switch call.method {
        case "io.example.test.Ping":
            let text = call.parameters["text"]?.stringValue ?? ""
            connection.enqueueReply { w in
                w.key("text")
                w.string(text)
            }
        case "io.example.test.Note":
            notes.append(call.parameters["text"]?.stringValue ?? "")
            if !call.oneway { connection.enqueue(reply: VarlinkReply()) }
        case "io.example.test.Count":
            guard call.more else {
                connection.enqueue(error: .expectedMore())
                return
            }
            let n = call.parameters["n"]?.intValue ?? 0
            for i in 0..<n {
                connection.enqueue(reply: VarlinkReply(parameters: ["i": .int(i)], continues: i < n - 1))
            }
        case "io.example.test.Fail":
            connection.enqueue(error: VarlinkError(name: "io.example.test.Failed", parameters: ["code": 7]))
        default:
            connection.enqueue(error: .methodNotFound(call.method))
        }
    }

    private func flush(_ fd: Int32, _ connection: inout VarlinkConnection) throws {
        while connection.hasPendingOutput {
            switch connection.withPendingOutput({ UnixSocket.writeNonBlocking(fd, $0) }) {
            case .bytes(let n): connection.consumedOutput(n)
            case .wouldBlock: try #require(waitFor(fd, Int16(POLLOUT)), "client stopped reading")
            case .closed: return
            case .error(let code): Issue.record("write failed: errno \(code)"); return
            }
        }
    }
}

extension SocketTests {
    @Suite struct VarlinkClientTests {
        @Test func roundTripsEveryKindOfCall() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/io.example.test"
            let listener = try UnixSocket.listen(path: path)
            defer { close(listener) }

            let log = Shared<[String]>([])
            let client = TestThread {
                func record(_ line: String) { log.update { $0.append(line) } }
                do {
                    let client = try VarlinkClient(path: path, timeout: .seconds(5))
                    record("ping " + (try client.call("io.example.test.Ping", ["text": "héllo"])["text"]?.stringValue ?? "?"))

                    let info = try client.call("org.varlink.service.GetInfo")
                    record("interfaces \(info["interfaces"]!)")
                    let idl = try client.call("org.varlink.service.GetInterfaceDescription", ["interface": "io.example.test"])
                    record("idl \(idl["description"]?.stringValue?.hasPrefix("interface io.example.test") == true)")

                    var counted: [Int64] = []
                    try client.callMore("io.example.test.Count", ["n": 3]) { reply in
                        counted.append(reply["i"]?.intValue ?? -1)
                        return true
                    }
                    record("count \(counted)")

                    do {
                        _ = try client.call("io.example.test.Fail")
                        record("fail did not throw")
                    } catch let error as VarlinkError {
                        record("error \(error)")
                    }
                    do {
                        _ = try client.call("io.example.test.Count", ["n": 1])
                    } catch let error as VarlinkError {
                        record("error \(error.name)")
                    }

                    // A oneway call gets no reply, so the next reply belongs to the next call.
                    try client.send(oneway: "io.example.test.Note", ["text": "quiet"])
                    record("after oneway " + (try client.call("io.example.test.Ping", ["text": "next"])["text"]?.stringValue ?? "?"))

                    // Pipelined raw calls come back in order.
                    var raw: [UInt8] = []
                    for i in 0..<3 { raw += VarlinkCall(method: "io.example.test.Ping", parameters: ["text": .string("p\(i)")]).encoded() }
                    try client.sendRaw(raw)
                    var pipelined: [String] = []
                    for _ in 0..<3 { pipelined.append(try client.receiveMessage()["parameters"]?["text"]?.stringValue ?? "?") }
                    record("pipelined \(pipelined)")

                    do {
                        _ = try client.call("io.example.test.Missing")
                    } catch let error as VarlinkError {
                        record("error \(error)")
                    }
                    client.close()
                    do {
                        _ = try client.call("io.example.test.Ping", ["text": "x"])
                    } catch let error as VarlinkClientError {
                        record("closed \(error)")
                    }
                } catch {
                    record("unexpected \(error)")
                }
            }
            var server = TestServer()
            try server.serveOneClient(listener)
            client.join()

            #expect(log.value == [
                "ping héllo",
                #"interfaces ["org.varlink.service","io.example.test"]"#,
                "idl true",
                "count [0, 1, 2]",
                #"error io.example.test.Failed {"code":7}"#,
                "error org.varlink.service.ExpectedMore",
                "after oneway next",
                #"pipelined ["p0", "p1", "p2"]"#,
                #"error org.varlink.service.MethodNotFound {"method":"io.example.test.Missing"}"#,
                "closed connection closed",
            ])
            #expect(server.notes == ["quiet"])
            #expect(server.violations.isEmpty)
        }

        @Test func stoppingAStreamEarlyClosesTheConnection() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/sock"
            let listener = try UnixSocket.listen(path: path)
            defer { close(listener) }

            let seen = Shared<[Int64]>([])
            let closed = Shared(false)
            let client = TestThread {
                do {
                    let client = try VarlinkClient(path: path, timeout: .seconds(5))
                    try client.callMore("io.example.test.Count", ["n": 10]) { reply in
                        seen.update { $0.append(reply["i"]?.intValue ?? -1) }
                        return reply["i"]?.intValue != 1
                    }
                    closed.update { $0 = client.isClosed }
                } catch {
                    seen.update { $0.append(-99) }
                }
            }
            var server = TestServer()
            try server.serveOneClient(listener)
            client.join()
            #expect(seen.value == [0, 1])
            #expect(closed.value)
        }

        @Test func protocolViolationGetsAnErrorReplyThenClose() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/sock"
            let listener = try UnixSocket.listen(path: path)
            defer { close(listener) }

            let log = Shared<[String]>([])
            let client = TestThread {
                do {
                    let client = try VarlinkClient(path: path, timeout: .seconds(5))
                    try client.sendRaw(Array(#"{"method":"io.example.test.Ping","parameters":"#.utf8) + [0])
                    let reply = try client.receiveMessage()
                    log.update { $0.append("\(reply["error"]!) \(reply["parameters"]?["reason"] ?? .null)") }
                    _ = try client.receiveMessage()
                } catch {
                    log.update { $0.append("\(error)") }
                }
            }
            var server = TestServer()
            try server.serveOneClient(listener)
            client.join()
            #expect(log.value == [#""io.example.test.ProtocolError" "invalidJSON""#, "connection closed"])
            #expect(server.violations.map(\.reason) == [.invalidJSON])
        }

        @Test func timesOutWhenTheServerNeverAnswers() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/sock"
            let listener = try UnixSocket.listen(path: path)
            defer { close(listener) }
            // The kernel completes the connection from the backlog; nobody ever reads it.
            let client = try VarlinkClient(path: path, timeout: .milliseconds(50))
            #expect(throws: VarlinkClientError.timedOut) { try client.call("io.example.test.Ping") }
        }

        @Test func rejectsMalformedAndOversizeReplies() throws {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path + "/sock"
            let listener = try UnixSocket.listen(path: path)
            defer { close(listener) }

            let small = try VarlinkClient(path: path, timeout: .seconds(5), maxMessageBytes: 16)
            let other = try VarlinkClient(path: path, timeout: .seconds(5))
            let partial = try VarlinkClient(path: path, timeout: .seconds(5), maxMessageBytes: 16)
            var accepted: [Int32] = []
            for _ in 0..<3 {
                try #require(waitFor(listener, Int16(POLLIN)))
                accepted.append(try #require(try UnixSocket.accept(listener)))
            }
            defer { accepted.forEach { close($0) } }
            let (first, second, third) = (accepted[0], accepted[1], accepted[2])

            // Over the limit before any NUL arrives: rejected without waiting for the rest.
            let unterminated = Array(#"{"parameters":{"text":"#.utf8)
            _ = unterminated.withUnsafeBytes { UnixSocket.writeNonBlocking(third, $0) }
            #expect(throws: VarlinkClientError.messageTooLarge(limit: 16)) { try partial.receiveMessage() }
            #expect(throws: VarlinkClientError.connectionClosed) { try partial.receiveMessage() }

            let big = Array(#"{"parameters":{"text":"far too long for the limit"}}"#.utf8) + [0]
            _ = big.withUnsafeBytes { UnixSocket.writeNonBlocking(first, $0) }
            #expect(throws: VarlinkClientError.messageTooLarge(limit: 16)) { try small.receiveMessage() }
            #expect(small.isClosed)

            let replies = Array("[1]\0{\"parameters\":{},\"continues\":true}\0nonsense\0".utf8)
            _ = replies.withUnsafeBytes { UnixSocket.writeNonBlocking(second, $0) }
            #expect(throws: VarlinkClientError.invalidReply("malformed reply field ''")) { try other.call("io.example.test.Ping") }
            #expect(throws: VarlinkClientError.invalidReply("'continues' in the reply to a call without 'more'")) { try other.call("io.example.test.Ping") }
            #expect(throws: VarlinkClientError.invalidReply("invalid literal at byte 0")) { try other.receiveMessage() }
        }

        @Test func connectFailureIsASocketError() {
            let path = "/nonexistent-varlink-dir/sock"
            #expect(throws: VarlinkClientError.socket(.system(operation: "connect", path: path, errno: ENOENT))) {
                try VarlinkClient(path: path)
            }
            #expect(VarlinkClientError.timedOut.description == "timed out waiting for the server")
            #expect(VarlinkClientError.io(operation: "recv", errno: EBADF).description == "recv failed: Bad file descriptor")
        }
    }
}
