/// Contention between interactive and bulk clients: while a client that waits for its replies
/// competes, the others' calls come in rounds, fresh only when a batch holding an interactive
/// call begins, so that its replies never wait behind much of theirs.
extension VarlinkServer {
    /// An interactive call at `time` from `conn`: it competes for a few of its own gaps.
    func noteInteractiveCall(_ conn: ClientConnection, at time: UInt64) {
        interactiveMemory = Self.interactiveMemory(afterGap: conn.lastInteractiveAt.map { time &- $0 })
        conn.lastInteractiveAt = time
        lastInteractiveCall = (time, conn.number)
        interactiveInBatch = true
    }

    /// How long a client counts as competing after a call that came `gap` µs after its last
    /// one (nil: its first).
    static func interactiveMemory(afterGap gap: UInt64?) -> UInt64 {
        guard let gap else { return shortestInteractiveMemory }
        if gap >= longestInteractiveMemory / interactiveGapsRemembered { return longestInteractiveMemory }
        return max(gap * interactiveGapsRemembered, shortestInteractiveMemory)
    }

    /// The most calls a client had in flight at its recent calls: this call's count, or the
    /// last peak less a 32nd. A client that keeps a window of 64 calls in flight has few owed
    /// just after a batch of its replies went out, and was taken for an interactive one for a
    /// sixth of its calls (so it escaped the small budgets, and the client that waits for each
    /// reply waited behind its batches); its peak comes back every window, even when all 64
    /// replies go out at once, and a client that really does wait for its replies is
    /// interactive again after about 30 calls.
    static func recentInFlight(previous: Int, now: Int) -> Int {
        max(now, previous - (previous + 31) / 32)
    }

    /// A new batch began gathering. While an interactive client competes, a bulk client's
    /// calls come in rounds: its budget is fresh only when a batch holding an interactive
    /// call begins (or contention ends), so it adds at most `callsPerBatch` calls per
    /// interactive call however fast commits go. Everyone else goes on at once.
    func batchBegan() {
        lastBatchMembers = batchMembers.count
        let roundEnds = interactiveInBatch || !interactiveRecently
        interactiveInBatch = false
        releaseMembers(holdingContended: !roundEnds)
    }

    func releaseMembers(holdingContended: Bool) {
        guard !batchMembers.isEmpty else { return }
        let members = batchMembers
        batchMembers.removeAll(keepingCapacity: true)
        for conn in members {
            if holdingContended && conn.machine.contended && !conn.isClosed {
                batchMembers.append(conn)
                continue
            }
            conn.inBatch = false
            // The reservation was the old batch's; the next serve decides the new one's.
            conn.machine.batchReserved = false
            if !conn.isClosed { step(conn, .batchBegan) }
        }
        if !batchMembers.isEmpty, let last = lastInteractiveCall {
            // Contention ends if no interactive call comes: the round must not outlive it.
            _ = contentionTimer?.reschedule(at: last.time &+ interactiveMemory)
        }
    }

    /// No interactive call for a while: the held bulk clients go on.
    func contentionEnded() {
        guard !interactiveRecently, !batchMembers.isEmpty else {
            if let last = lastInteractiveCall, !batchMembers.isEmpty {
                _ = contentionTimer?.reschedule(at: last.time &+ interactiveMemory)
            }
            return
        }
        releaseMembers(holdingContended: false)
    }
}
