// What the connection's state allows, derived from it alone (no event changes anything here).

extension ConnectionMachine {
    /// Replies and bytes the client still has to receive.
    var owedBytes: Int { heldBytes + outputBytes }

    private var backedUp: Bool {
        heldReplies + outputReplies >= budget.maxOwedReplies || owedBytes >= budget.owedBytesHighWater
    }

    private var withinBudget: Bool {
        // A gone peer's last calls are not held back: it has no replies to make anyone wait for.
        if contended && batchReserved && phase != .peerGone { return false }
        return contended ? callsThisPass < budget.callsPerPass && callsThisBatch < budget.callsPerBatch
            : callsThisPass < budget.callsPerPassAlone && callsThisBatch < budget.callsPerBatchAlone
    }

    /// Calls may be taken from the input now.
    var mayHandleCalls: Bool {
        switch phase {
        case .serving, .inputClosed, .peerGone:
            // Replies of a gone peer are dropped, so it cannot back up.
            return !streaming && withinBudget && (phase == .peerGone || !backedUp)
        case .ending, .closed:
            return false
        }
    }

    /// Bytes may be read now: only when nothing complete waits (so the input stays bounded).
    var mayRead: Bool {
        switch phase {
        case .serving: return !hasCall && mayHandleCalls
        // A gone peer's last bytes are read (without epoll) so that its calls take effect.
        case .peerGone: return !hasCall && withinBudget
        // A refused client's first call is awaited (and discarded) so that it reads the error.
        case .ending(.refused): return !refusalAnswered
        case .inputClosed, .ending, .closed: return false
        }
    }

    /// Live stream data (committed events as they are published) of `bytes` more may be queued
    /// now. No: the stream falls behind (the server then reports `streamBehind`), and catches up
    /// from the event log in order once the client has read, with `mayProduce`.
    func mayQueueLiveOutput(_ bytes: Int) -> Bool {
        guard streaming, deferredBytes == 0 else { return false }
        switch phase {
        case .serving, .inputClosed: return owedBytes + bytes <= budget.owedBytesHighWater
        case .peerGone, .ending, .closed: return false
        }
    }

    /// More unread output, queued or deferred, than the client may have: a slow reader.
    var exceedsOutputLimit: Bool { outputBytes + deferredBytes > budget.maxOutputBytes }

    /// A stream may produce more output now.
    var mayProduce: Bool {
        guard streaming && streamHasMore else { return false }
        switch phase {
        case .serving, .inputClosed: return owedBytes < budget.owedBytesHighWater / 2
        case .peerGone, .ending, .closed: return false
        }
    }

    var interest: Interest {
        switch phase {
        case .serving, .inputClosed, .ending:
            return Interest(read: mayRead, write: outputBytes > 0 && writeBlocked, registered: true)
        case .peerGone, .closed:
            return .none
        }
    }

    /// A complete call waits for nothing but a fresh budget: the next pass's (`passBegan`) or
    /// the next batch's (`batchBegan`). Whoever runs the connection must then be sure to give it
    /// those events, or it waits for ever: its input is read, so no readiness comes to wake it.
    var waitsForBudget: Bool {
        switch phase {
        case .serving, .inputClosed, .peerGone: return hasCall && !streaming && !withinBudget
        case .ending, .closed: return false
        }
    }

    /// This pass's budget is spent (a new pass gives a fresh one; the batch's may still be).
    var passBudgetSpent: Bool {
        callsThisPass >= (contended ? budget.callsPerPass : budget.callsPerPassAlone)
    }

    /// The connection wants a turn in this pass.
    var needsService: Bool {
        if isFinished { return true }
        if hasCall && mayHandleCalls { return true }
        if mayRead && (maybeReadable || phase == .peerGone) { return true }
        return mayProduce
    }

    /// Nothing more will happen: close it.
    var isFinished: Bool {
        switch phase {
        case .serving: return false
        case .inputClosed: return !hasCall && !streaming && heldReplies == 0 && outputBytes == 0
        case .peerGone: return !hasCall && !maybeReadable
        case .ending(.refused): return refusalAnswered && outputBytes == 0
        case .ending: return heldReplies == 0 && outputBytes == 0
        case .closed: return true
        }
    }

    /// Holding part of a message, or ending: the server must call `tick` for this one.
    var needsClock: Bool {
        switch phase {
        case .serving: return partialBytes > 0
        case .ending: return true
        case .inputClosed, .peerGone, .closed: return false
        }
    }

    var isClosed: Bool { phase == .closed }

    /// Serving or answering: a limit can still end it (not yet ending, gone or closed).
    var mayBeCutOff: Bool { phase == .serving || phase == .inputClosed }
}
