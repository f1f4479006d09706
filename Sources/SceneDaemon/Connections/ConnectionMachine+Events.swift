// What the server tells a connection's machine (`Event`) and what the machine answers (`Action`).

extension ConnectionMachine {
    enum Event: Sendable, Equatable {
        /// epoll: input (or EOF) to read.
        case readable
        /// epoll: room to write.
        case writable
        /// epoll EPOLLHUP, or ECONNRESET/EPIPE on a read or write: the peer is gone.
        case hangUp
        /// epoll EPOLLERR or an unexpected errno: the socket is unusable.
        case socketError
        /// A read returned bytes; `partialBytes` of an unfinished message are now buffered and
        /// `hasCall` says whether a complete message waits; `more`: the read filled the buffer.
        case received(partialBytes: Int, hasCall: Bool, more: Bool, now: UInt64)
        /// A read returned EAGAIN.
        case readWouldBlock
        /// A read returned 0.
        case endOfInput
        /// A call was taken from the input and handled; `opensStream`: it was a `more` call.
        case callHandled(opensStream: Bool)
        /// No complete call is left in the input; `partialBytes` of an unfinished one remain.
        case inputExhausted(partialBytes: Int)
        /// A reply was held until its batch commits.
        case replyHeld(bytes: Int)
        /// Held replies became output (their batch committed, or failed and became errors).
        case repliesReleased(count: Int, heldBytes: Int, outputBytes: Int)
        /// Bytes were appended to the output directly (stream data that is already committed).
        case outputAdded(bytes: Int)
        /// A write sent `bytes`.
        case wrote(bytes: Int)
        case writeWouldBlock
        /// The open `more` call ended.
        case streamEnded
        /// Whether the open stream has more to produce right now (a listing, a monitor's
        /// backlog), as opposed to waiting for events.
        case streamHasMore(Bool)
        /// The open stream is behind the committed events by `bytes` (as encoded for this
        /// client) that were not queued because its output was at the high-water mark; 0: it
        /// has caught up. They count as unread output against `maxOutputBytes`.
        case streamBehind(bytes: Int)
        /// The peer broke the protocol: the violation's error reply is owed, then the end.
        case protocolViolation(now: UInt64)
        /// A limit was exceeded (the setting's name). `cutOutput`: the client does not read,
        /// so unsent output is dropped to free memory at once (slow reader).
        case limitExceeded(String, cutOutput: Bool, now: UInt64)
        /// A new loop pass began: the per-pass budget is fresh.
        case passBegan
        /// A new batch began gathering: the per-batch budget is fresh.
        case batchBegan
        /// The clock, for the idle and linger timeouts.
        case tick(now: UInt64)
    }

    enum Action: Equatable, Sendable {
        case none
        /// Read from the socket (up to the pass's byte budget).
        case read
        /// Take calls from the input.
        case handleCalls
        /// Write the pending output.
        case write
        /// Queue the violation's error reply (held after earlier replies, in order).
        case sendViolation
        /// Drop unsent whole messages (and held replies) if `cutOutput`, then send
        /// LimitExceeded for this limit.
        case sendLimitError(String, cutOutput: Bool)
        /// Close the socket now; whatever is still owed is dropped.
        case close
    }
}
