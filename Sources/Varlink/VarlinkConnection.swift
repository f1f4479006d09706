import Glibc

/// Server side of one Varlink connection, without I/O: feed it received bytes, take calls out,
/// put replies in, and write out whatever is pending.
///
/// Replies are sent in the order they are enqueued. Varlink requires pipelined calls to be
/// answered in order, so the caller must handle the calls from `nextCall()` one at a time and
/// enqueue each reply (or, for a `more` call, all of its replies) before starting the next.
/// Calls with `oneway` get no reply at all.
public struct VarlinkConnection: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Largest message accepted, not counting the NUL terminator.
        public var maxMessageBytes: Int
        /// Above this much unsent output the peer is not reading and should be dropped.
        public var maxPendingOutputBytes: Int

        public init(maxMessageBytes: Int = 1 << 20, maxPendingOutputBytes: Int = 16 << 20) {
            self.maxMessageBytes = maxMessageBytes
            self.maxPendingOutputBytes = maxPendingOutputBytes
        }
    }

    public enum Incoming: Sendable, Equatable {
        case call(VarlinkCall)
        case needMoreData
        /// The connection is dead: send `violation.errorReply(errorName:)`, flush, close.
        case violation(ProtocolViolation)
    }

    public let limits: Limits

    private var input: [UInt8] = []
    /// Start of the first message not yet returned by `nextCall()`.
    private var inputHead = 0
    /// `input[inputHead..<scanned]` is known to contain no NUL, so it is never searched again.
    private var scanned = 0
    /// Index of the NUL ending the message at `inputHead`, once found.
    private var terminator: Int?

    private var output: [UInt8] = []
    private var outputHead = 0
    /// The last byte written ended a message (false while one is partly on the wire); kept
    /// apart from `outputHead` because compaction moves the head to 0 mid-message.
    private var wroteWholeMessages = true

    /// Set once the peer has broken the protocol; the connection accepts no more input.
    public private(set) var violation: ProtocolViolation?

    /// Buffers bigger than this are released rather than kept for reuse when they empty,
    /// so one huge message does not pin memory for the connection's lifetime.
    private static let retainedCapacity = 64 << 10

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    // MARK: Input

    /// Appends received bytes. Ignored after a violation.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) {
        guard violation == nil, !bytes.isEmpty else { return }
        compactInput()
        input.append(contentsOf: bytes)
        // Fail as soon as the message being assembled cannot fit, instead of buffering the rest.
        if terminator == nil, input.count - inputHead > limits.maxMessageBytes,
            findTerminator(searchingUpTo: inputHead + limits.maxMessageBytes + 1) == nil
        {
            _ = fail(.messageTooLarge, "message exceeds \(limits.maxMessageBytes) bytes")
        }
    }

    public mutating func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// Bytes received but not yet returned as calls.
    public var bufferedInputCount: Int { input.count - inputHead }

    /// True when `nextCall()` would return a call or a violation rather than `.needMoreData`.
    /// Cheap to repeat: the search resumes where it stopped.
    public mutating func hasCompleteMessage() -> Bool {
        if violation != nil || terminator != nil { return true }
        if findTerminator(searchingUpTo: input.count) != nil { return true }
        return input.count - inputHead > limits.maxMessageBytes
    }

    /// The next complete call, `.needMoreData`, or the violation that killed the connection.
    public mutating func nextCall() -> Incoming {
        if let violation { return .violation(violation) }
        let end: Int
        if let terminator {
            end = terminator
        } else if let found = findTerminator(searchingUpTo: input.count) {
            end = found
        } else {
            if input.count - inputHead > limits.maxMessageBytes {
                return fail(.messageTooLarge, "message exceeds \(limits.maxMessageBytes) bytes")
            }
            return .needMoreData
        }

        let start = inputHead
        inputHead = end + 1
        scanned = inputHead
        terminator = nil
        if end - start > limits.maxMessageBytes {
            return fail(.messageTooLarge, "message exceeds \(limits.maxMessageBytes) bytes")
        }

        let parsed = input.withUnsafeBytes { buffer in
            Result { () throws(JSONError) in try JSONParser.parse(UnsafeRawBufferPointer(rebasing: buffer[start..<end])) }
        }
        if inputHead == input.count { resetInput() }

        switch parsed {
        case .failure(let error):
            return fail(error.kind == .invalidUTF8 ? .invalidUTF8 : .invalidJSON, error.description)
        case .success(let message):
            switch VarlinkCall.decode(message) {
            case .success(let call):
                return .call(call)
            case .failure(let violation):
                self.violation = violation
                dropInput()
                return .violation(violation)
            }
        }
    }

    /// Searches for the NUL ending the message at `inputHead`, resuming where the last search
    /// stopped and looking no further than `limit`.
    private mutating func findTerminator(searchingUpTo limit: Int) -> Int? {
        let stop = min(limit, input.count)
        let from = max(scanned, inputHead)
        guard from < stop else { return nil }
        let found: Int? = input.withUnsafeBytes { buffer in
            guard let hit = memchr(buffer.baseAddress! + from, 0, stop - from) else { return nil }
            return UnsafeRawPointer(hit) - buffer.baseAddress!
        }
        if let found {
            terminator = found
            scanned = found
        } else {
            scanned = stop
        }
        return found
    }

    /// Moves unread bytes to the front once the consumed prefix dominates, so each byte is
    /// moved at most a constant number of times (amortised O(1)).
    private mutating func compactInput() {
        guard inputHead > 0 else { return }
        if inputHead == input.count {
            resetInput()
        } else if inputHead >= 4096, inputHead * 2 >= input.count {
            input.removeSubrange(0..<inputHead)
            scanned -= inputHead
            if let t = terminator { terminator = t - inputHead }
            inputHead = 0
        }
    }

    private mutating func resetInput() {
        if input.capacity > Self.retainedCapacity {
            input = []
        } else {
            input.removeAll(keepingCapacity: true)
        }
        inputHead = 0
        scanned = 0
        terminator = nil
    }

    /// Forgets everything received and not yet taken, releasing its buffer: for a connection
    /// that will take no more calls (cut off at a limit) but may linger to read its error.
    public mutating func discardInput() { dropInput() }

    private mutating func dropInput() {
        input = []
        inputHead = 0
        scanned = 0
        terminator = nil
    }

    private mutating func fail(_ reason: ProtocolViolation.Reason, _ message: String) -> Incoming {
        let violation = ProtocolViolation(reason: reason, message: message)
        self.violation = violation
        dropInput()
        return .violation(violation)
    }

    // MARK: Output

    /// Queues an already encoded, NUL-terminated message.
    public mutating func enqueue(_ bytes: [UInt8]) {
        // Nothing unsent: adopt the caller's buffer instead of copying it into ours (a batch's
        // replies can be hundreds of KiB; a copy would also regrow `output` from empty).
        if outputHead == output.count, output.capacity <= bytes.count {
            output = bytes
            outputHead = 0
            return
        }
        output.append(contentsOf: bytes)
    }

    public mutating func enqueue(reply: VarlinkReply) {
        withOutputWriter { reply.write(to: &$0) }
    }

    public mutating func enqueue(error: VarlinkError) {
        withOutputWriter { error.write(to: &$0) }
    }

    /// Hot path: writes `{"parameters":{…}}` straight into the output buffer. The closure
    /// writes the members of the parameters object (keys and values) and nothing else.
    public mutating func enqueueReply(continues: Bool = false, _ writeParameters: (inout JSONWriter) -> Void) {
        withOutputWriter { writer in writer.reply(continues: continues, writeParameters) }
    }

    private mutating func withOutputWriter(_ body: (inout JSONWriter) -> Void) {
        // Swap the buffer into the writer so it stays uniquely referenced (no copy on append).
        var writer = JSONWriter(reservingCapacity: 0)
        swap(&writer.bytes, &output)
        body(&writer)
        writer.bytes.append(0)
        swap(&writer.bytes, &output)
    }

    public var pendingOutputCount: Int { output.count - outputHead }
    public var hasPendingOutput: Bool { outputHead < output.count }
    /// The peer is not reading fast enough; the server should drop it.
    public var isOverflowing: Bool { pendingOutputCount > limits.maxPendingOutputBytes }

    /// Gives the unsent bytes to `body`, e.g. for `write(2)`; report progress with `consumedOutput`.
    public func withPendingOutput<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result = output.withUnsafeBytes { buffer in
            Result { () throws(E) in try body(UnsafeRawBufferPointer(rebasing: buffer[outputHead...])) }
        }
        return try result.get()
    }

    /// Drops every whole message not yet begun on the wire, keeping the rest of one already
    /// partly written (so the peer still sees well-formed framing). Returns the bytes dropped.
    /// For a peer that does not read: its memory is freed at once.
    @discardableResult
    public mutating func dropUnsentMessages() -> Int {
        guard hasPendingOutput else { return 0 }
        let before = pendingOutputCount
        if wroteWholeMessages {
            output = []
            outputHead = 0
        } else {
            // The partly written message ends at the next NUL (every queued message has one).
            let end = output[outputHead...].firstIndex(of: 0).map { $0 + 1 } ?? output.count
            output = Array(output[outputHead..<end])
            outputHead = 0
        }
        return before - pendingOutputCount
    }

    /// Whether a large output buffer stays when it drains, for `takeDrainedOutput` (a server
    /// that reuses buffers across connections); otherwise it is freed at once.
    public var keepsDrainedOutput = false

    /// The output buffer if everything in it was written and it is larger than a connection
    /// keeps for itself; the connection starts over with an empty one.
    public mutating func takeDrainedOutput() -> [UInt8]? {
        guard outputHead == output.count, output.capacity > Self.retainedCapacity else { return nil }
        var taken: [UInt8] = []
        swap(&taken, &output)
        outputHead = 0
        return taken
    }

    /// Marks `count` pending bytes as written.
    public mutating func consumedOutput(_ count: Int) {
        precondition(count >= 0 && count <= pendingOutputCount, "consumed more output than was pending")
        outputHead += count
        if count > 0 { wroteWholeMessages = output[outputHead - 1] == 0 }
        if outputHead == output.count {
            if output.capacity > Self.retainedCapacity, !keepsDrainedOutput {
                output = []
            } else {
                output.removeAll(keepingCapacity: true)
            }
            outputHead = 0
        } else if outputHead >= 4096, outputHead * 2 >= output.count {
            output.removeSubrange(0..<outputHead)
            outputHead = 0
        }
    }
}
