import Testing
@testable import Varlink

/// Output buffers handed over without copies: adopted when nothing is unsent, kept after they
/// drain only for a server that recycles them.
@Suite struct VarlinkConnectionBufferTests {
    private func framed(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    @Test func enqueueAfterPartialOutputAppendsInOrder() {
        var connection = VarlinkConnection()
        connection.enqueue(framed("first"))
        connection.consumedOutput(2)
        connection.enqueue(framed("second"))
        #expect(String(decoding: connection.withPendingOutput { Array($0) }, as: UTF8.self) == "rst\0second\0")
    }

    @Test func adoptedBufferIsSentWhole() {
        var connection = VarlinkConnection()
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 300_000) + [0]
        connection.enqueue(big)
        #expect(connection.pendingOutputCount == big.count)
        #expect(connection.withPendingOutput { Array($0) } == big)
        connection.enqueue(framed("after"))
        connection.consumedOutput(big.count)
        #expect(String(decoding: connection.withPendingOutput { Array($0) }, as: UTF8.self) == "after\0")
    }

    @Test func drainedLargeOutputIsFreedUnlessKept() {
        var plain = VarlinkConnection()
        plain.enqueue([UInt8](repeating: 1, count: 200_000) + [0])
        plain.consumedOutput(plain.pendingOutputCount)
        #expect(plain.takeDrainedOutput() == nil)

        var keeping = VarlinkConnection()
        keeping.keepsDrainedOutput = true
        keeping.enqueue([UInt8](repeating: 1, count: 200_000) + [0])
        #expect(keeping.takeDrainedOutput() == nil, "not drained yet")
        keeping.consumedOutput(keeping.pendingOutputCount)
        let taken = keeping.takeDrainedOutput()
        #expect((taken?.capacity ?? 0) >= 200_001)
        #expect(!keeping.hasPendingOutput)
        #expect(keeping.takeDrainedOutput() == nil, "taken once")
        keeping.enqueue(framed("next"))
        #expect(String(decoding: keeping.withPendingOutput { Array($0) }, as: UTF8.self) == "next\0")
    }

    @Test func smallDrainedOutputStaysWithTheConnection() {
        var connection = VarlinkConnection()
        connection.keepsDrainedOutput = true
        connection.enqueue(framed("small"))
        connection.consumedOutput(connection.pendingOutputCount)
        #expect(connection.takeDrainedOutput() == nil)
    }
}
