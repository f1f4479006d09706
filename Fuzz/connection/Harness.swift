// fuzz-modules: SceneDaemon
// The connection state machine (ConnectionMachine): any sequence of events keeps its
// invariants. Each input byte picks one event (and the next bytes its sizes and times); after
// every event: only the machine's own close closes it, a closed machine does nothing more, a
// gone peer is out of epoll and owed nothing, counters never go negative, the epoll interest
// asks to write exactly when output waits, only an open stream is behind the events, and
// whatever is left to do shows up as needing service — a connection that has work and never
// gets a turn wedges it. A pair the machine calls impossible (a debug build traps on it; this
// one is optimised) must leave it exactly as it was.
@testable import SceneDaemon

func event(_ code: UInt8, _ size: Int, _ now: UInt64) -> ConnectionMachine.Event {
    switch code % 29 {
    case 0: .readable
    case 1: .writable
    case 2: .hangUp
    case 3: .socketError
    case 4: .received(partialBytes: 0, hasCall: true, more: size % 2 == 0, now: now)
    case 5: .received(partialBytes: size, hasCall: false, more: size % 3 == 0, now: now)
    case 6: .readWouldBlock
    case 7: .endOfInput
    case 8: .callHandled(opensStream: false)
    case 9: .callHandled(opensStream: true)
    case 10: .inputExhausted(partialBytes: size % 5 == 0 ? 0 : size)
    case 11: .replyHeld(bytes: size)
    case 12: .repliesReleased(count: size % 7, heldBytes: size, outputBytes: size)
    case 13: .outputAdded(bytes: size)
    case 14: .wrote(bytes: size)
    case 15: .writeWouldBlock
    case 16: .streamEnded
    case 17: .streamHasMore(size % 2 == 0)
    case 18: .protocolViolation(now: now)
    case 19: .limitExceeded("MaxOutputPerConnection", cutOutput: true, now: now)
    case 20: .limitExceeded("IdleTimeoutSec", cutOutput: false, now: now)
    case 21: .passBegan
    case 22: .batchBegan
    case 23: .tick(now: now)
    case 24: .tick(now: now &+ 60_000_000)
    case 25: .repliesReleased(count: 1, heldBytes: size, outputBytes: 0)
    case 26: .streamBehind(bytes: size % 3 == 0 ? 0 : size)
    case 27: .callHandled(opensStream: false, oneway: size % 2 == 0, queuedBytes: size, now: now)
    default: .received(partialBytes: 0, hasCall: size % 2 == 1, more: false, now: now)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = inputBytes(data, size)
    guard let first = bytes.first else { return 0 }
    var now: UInt64 = 1_000_000
    var m = ConnectionMachine(now: now, refusedFor: first % 8 == 0 ? "MaxConnections" : nil)
    var i = 1
    while i + 1 < bytes.count {
        let code = bytes[i]
        let magnitude = Int(bytes[i + 1]) << (Int(code >> 5) * 2)
        i += 2
        now &+= UInt64(magnitude) * 1000
        let previous = m
        let before = m.phase
        let outputBefore = m.outputBytes
        // The top eighth of the codes is a turn, with the contention the scheduler found.
        let next = code >= 0xE0
            ? ConnectionMachine.Event.turnBegan(contended: code & 1 != 0, reserved: code & 2 != 0)
            : event(code, magnitude, now)
        let action = m.on(next)
        let what = "\(before) + event \(code) → \(action), \(m.phase)"
        if !previous.permits(next) { require(action == .none && m == previous, what) }
        if before == .closed { require(action == .none && m.phase == .closed, what) }
        require((action == .close) == (m.phase == .closed && before != .closed), what)
        if m.phase == .peerGone || m.phase == .closed {
            require(m.interest == .none && m.outputBytes == 0 && m.heldReplies == 0 && action != .write, what)
        }
        require(m.heldReplies >= 0 && m.heldBytes >= 0 && m.outputBytes >= 0 && m.partialBytes >= 0, what)
        // epoll is asked for room only once the socket refused output; output it has not
        // refused is written by the action that queued it.
        if m.interest.registered { require(m.interest.write == (m.outputBytes > 0 && m.writeBlocked), what) }
        if m.outputBytes > outputBefore && !m.writeBlocked { require(action == .write, what) }
        if m.phase == .serving { require(!m.isFinished, what) }
        if m.hasCall { require(!m.mayRead, what) }
        if m.phase != .closed, m.hasCall, m.mayHandleCalls { require(m.needsService, what) }
        if m.isFinished { require(m.needsService, what) }
        if case .ending = m.phase { require(!m.mayHandleCalls, what) }
        // Only an open stream that can be written to is behind, and then takes no live output.
        require(m.deferredBytes >= 0, what)
        if !m.streaming || !(m.phase == .serving || m.phase == .inputClosed) { require(m.deferredBytes == 0, what) }
        if m.deferredBytes > 0 { require(!m.mayQueueLiveOutput(0), what) }
    }
    return 0
}
