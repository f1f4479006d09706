import Testing
@testable import Varlink

@Suite struct VarlinkConnectionTests {
    private func message(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    private func expectCall(_ incoming: VarlinkConnection.Incoming, _ method: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .call(let call) = incoming else {
            Issue.record("expected a call to \(method), got \(incoming)", sourceLocation: sourceLocation)
            return
        }
        #expect(call.method == method, sourceLocation: sourceLocation)
    }

    private func expectViolation(_ incoming: VarlinkConnection.Incoming, _ reason: ProtocolViolation.Reason, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .violation(let violation) = incoming else {
            Issue.record("expected a \(reason) violation, got \(incoming)", sourceLocation: sourceLocation)
            return
        }
        #expect(violation.reason == reason, sourceLocation: sourceLocation)
    }

    @Test func splitsManyMessagesFromOneReceive() {
        var connection = VarlinkConnection()
        var bytes: [UInt8] = []
        for i in 0..<100 { bytes += message(#"{"method":"io.example.M\#(i)","parameters":{"i":\#(i)}}"#) }
        connection.receive(bytes)
        for i in 0..<100 {
            guard case .call(let call) = connection.nextCall() else {
                Issue.record("message \(i) missing")
                return
            }
            #expect(call.method == "io.example.M\(i)")
            #expect(call.parameters["i"] == .int(Int64(i)))
        }
        #expect(connection.nextCall() == .needMoreData)
        #expect(connection.bufferedInputCount == 0)
    }

    @Test func assemblesAMessageFedByteByByte() {
        var connection = VarlinkConnection()
        let bytes = message(#"{"method":"io.example.Ping","parameters":{"text":"héllo"}}"#) + message(#"{"method":"io.example.Two"}"#)
        var calls: [VarlinkCall] = []
        for byte in bytes {
            connection.receive([byte])
            while case .call(let call) = connection.nextCall() { calls.append(call) }
        }
        #expect(calls.map(\.method) == ["io.example.Ping", "io.example.Two"])
        #expect(calls.first?.parameters["text"] == "héllo")
        #expect(connection.nextCall() == .needMoreData)
    }

    @Test func keepsPartialTailAcrossReceives() {
        var connection = VarlinkConnection()
        let first = message(#"{"method":"io.example.A"}"#)
        let second = message(#"{"method":"io.example.B"}"#)
        connection.receive(first + second.prefix(5))
        expectCall(connection.nextCall(), "io.example.A")
        #expect(connection.nextCall() == .needMoreData)
        #expect(connection.bufferedInputCount == 5)
        connection.receive(Array(second.dropFirst(5)))
        expectCall(connection.nextCall(), "io.example.B")
    }

    @Test func survivesLongPipelinesWithCompaction() {
        // Interleave receives and nextCall so the consumed prefix is compacted repeatedly.
        var connection = VarlinkConnection()
        let one = message(#"{"method":"io.example.Ping","parameters":{"text":"abcdefghijklmnopqrstuvwxyz"}}"#)
        var chunk: [UInt8] = []
        for _ in 0..<300 { chunk += one }
        var received = 0
        for round in 0..<20 {
            // Split at an odd offset so messages straddle receives.
            let cut = 1 + (round * 37) % (chunk.count - 1)
            connection.receive(Array(chunk[..<cut]))
            while case .call = connection.nextCall() { received += 1 }
            connection.receive(Array(chunk[cut...]))
            while case .call = connection.nextCall() { received += 1 }
        }
        #expect(received == 6000)
        #expect(connection.nextCall() == .needMoreData)
    }

    @Test func acceptsAMessageExactlyAtTheLimit() {
        let limits = VarlinkConnection.Limits(maxMessageBytes: 1 << 20)
        var connection = VarlinkConnection(limits: limits)
        let prefix = #"{"method":"io.example.Big","parameters":{"blob":""#
        let suffix = #""}}"#
        let padding = limits.maxMessageBytes - prefix.utf8.count - suffix.utf8.count
        let body = Array(prefix.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: padding) + Array(suffix.utf8)
        #expect(body.count == limits.maxMessageBytes)
        connection.receive(body + [0])
        guard case .call(let call) = connection.nextCall() else {
            Issue.record("message at the limit was rejected")
            return
        }
        #expect(call.parameters["blob"]?.stringValue?.utf8.count == padding)
    }

    @Test func rejectsAnOversizeMessageAsSoonAsItExceedsTheLimitWithoutANul() {
        let limit = 1 << 20
        var connection = VarlinkConnection()
        let start = Array(#"{"method":"io.example.Big","parameters":{"blob":""#.utf8)
        connection.receive(start)
        var buffered = start.count
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
        // Fill up to exactly the limit: still waiting for the rest.
        while buffered + chunk.count <= limit {
            connection.receive(chunk)
            buffered += chunk.count
            #expect(connection.nextCall() == .needMoreData)
        }
        connection.receive(Array(chunk[..<(limit - buffered)]))
        #expect(connection.bufferedInputCount == limit)
        #expect(connection.nextCall() == .needMoreData)
        // One more byte makes it impossible to fit: rejected at once, input dropped.
        connection.receive([UInt8(ascii: "a")])
        #expect(connection.violation?.reason == .messageTooLarge)
        #expect(connection.bufferedInputCount == 0)
        expectViolation(connection.nextCall(), .messageTooLarge)
    }

    @Test func rejectsOversizeMessageArrivingInOneReceive() {
        var connection = VarlinkConnection(limits: .init(maxMessageBytes: 64))
        connection.receive(message(#"{"method":"io.example.A"}"#) + [UInt8](repeating: 0x20, count: 100))
        // The complete call before the oversize one is still served, in order.
        expectCall(connection.nextCall(), "io.example.A")
        expectViolation(connection.nextCall(), .messageTooLarge)
    }

    @Test func rejectsOversizeMessageThatHasItsNul() {
        var connection = VarlinkConnection(limits: .init(maxMessageBytes: 64))
        connection.receive(message(#"{"method":"io.example.A","parameters":{"pad":"\#(String(repeating: "x", count: 64))"}}"#))
        expectViolation(connection.nextCall(), .messageTooLarge)
    }

    @Test(arguments: [
        (Array(#"{"method":"io.example.A""#.utf8), ProtocolViolation.Reason.invalidJSON),
        ([0x7B, 0x22, 0xC0, 0xAF, 0x22, 0x3A, 0x31, 0x7D], .invalidUTF8),
        (Array(#"{"method":"io.example.A","x":"\#u{0}"}"#.utf8).filter { $0 != 0 } + Array(#"\udead"}"#.utf8), .invalidJSON),
        (Array("[]".utf8), .notAnObject),
        (Array(#"{"parameters":{}}"#.utf8), .missingMethod),
        (Array(#"{"method":"nodots"}"#.utf8), .invalidMethod),
        (Array(#"{"method":"io.example.A","parameters":1}"#.utf8), .invalidParameters),
        (Array(#"{"method":"io.example.A","more":"x"}"#.utf8), .invalidFlag),
        ([], .invalidJSON),
    ] as [([UInt8], ProtocolViolation.Reason)])
    func violationsKillTheConnection(_ body: [UInt8], _ reason: ProtocolViolation.Reason) {
        var connection = VarlinkConnection()
        connection.receive(body + [0] + message(#"{"method":"io.example.After"}"#))
        expectViolation(connection.nextCall(), reason)
        // Dead for good: later input and calls are ignored.
        connection.receive(message(#"{"method":"io.example.Later"}"#))
        expectViolation(connection.nextCall(), reason)
        #expect(connection.bufferedInputCount == 0)
    }

    @Test func violationBuildsTheErrorReply() throws {
        let violation = ProtocolViolation(reason: .invalidJSON, message: "unexpected end of input at byte 3")
        let bytes = violation.errorReply(errorName: "io.example.scened.ProtocolError")
        #expect(bytes.last == 0)
        let reply = try VarlinkReply(from: JSONParser.parse(Array(bytes.dropLast())))
        #expect(reply.error == "io.example.scened.ProtocolError")
        #expect(reply.parameters == ["reason": "invalidJSON", "message": "unexpected end of input at byte 3"])
        #expect(violation.description == "invalidJSON: unexpected end of input at byte 3")
    }

    @Test func invalidJSONViolationNamesTheOffset() {
        var connection = VarlinkConnection()
        connection.receive(message(#"{"method" 1}"#))
        guard case .violation(let violation) = connection.nextCall() else {
            Issue.record("accepted invalid JSON")
            return
        }
        #expect(violation.message == "unexpected character at byte 10")
    }

    @Test func queuesOutputInOrderAndTracksConsumption() throws {
        var connection = VarlinkConnection()
        #expect(!connection.hasPendingOutput)
        connection.enqueue(reply: VarlinkReply(parameters: ["a": 1]))
        connection.enqueue(error: .methodNotFound("x.y.Z"))
        connection.enqueueReply(continues: true) { w in
            w.key("text")
            w.string("hi")
        }
        connection.enqueueReply { _ in }
        connection.enqueue(Array("raw".utf8) + [0])
        let expected = #"{"parameters":{"a":1}}"# + "\0"
            + #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"x.y.Z"}}"# + "\0"
            + #"{"parameters":{"text":"hi"},"continues":true}"# + "\0"
            + #"{"parameters":{}}"# + "\0" + "raw\0"
        let pending = connection.withPendingOutput { Array($0) }
        #expect(String(decoding: pending, as: UTF8.self) == expected)
        #expect(connection.pendingOutputCount == pending.count)

        connection.consumedOutput(5)
        #expect(connection.withPendingOutput { Array($0) } == Array(pending.dropFirst(5)))
        connection.consumedOutput(connection.pendingOutputCount)
        #expect(!connection.hasPendingOutput)
        #expect(connection.withPendingOutput { $0.count } == 0)
        connection.enqueue(reply: VarlinkReply())
        #expect(String(decoding: connection.withPendingOutput { Array($0) }, as: UTF8.self) == #"{"parameters":{}}"# + "\0")
    }

    @Test func partialWritesPreserveBytesAcrossCompaction() {
        var connection = VarlinkConnection()
        var all: [UInt8] = []
        for i in 0..<2000 {
            let reply = VarlinkReply(parameters: ["i": .int(Int64(i))])
            all += reply.encoded()
            connection.enqueue(reply: reply)
        }
        var written: [UInt8] = []
        while connection.hasPendingOutput {
            // Write in odd-sized pieces, as a socket might accept them.
            let n = min(777, connection.pendingOutputCount)
            written += connection.withPendingOutput { Array($0.prefix(n)) }
            connection.consumedOutput(n)
        }
        #expect(written == all)
    }

    @Test func reportsOverflowPastTheOutputCap() {
        var connection = VarlinkConnection(limits: .init(maxPendingOutputBytes: 100))
        connection.enqueue([UInt8](repeating: 1, count: 100))
        #expect(!connection.isOverflowing)
        connection.enqueue([0])
        #expect(connection.isOverflowing)
        connection.consumedOutput(1)
        #expect(!connection.isOverflowing)
    }

    @Test func defaultLimitsMatchTheProtocolBudget() {
        let limits = VarlinkConnection.Limits()
        #expect(limits.maxMessageBytes == 1 << 20)
        #expect(limits.maxPendingOutputBytes == 16 << 20)
    }
}
