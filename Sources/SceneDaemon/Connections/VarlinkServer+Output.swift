import Varlink

// MARK: - Commits and output

extension VarlinkServer {
    /// Batches up to `batch` are settled: their replies become output, or `failure`.
    func settle(through batch: UInt64, failure: VarlinkError?) {
        outbox.releaseReplies(through: batch, failure: failure) { number, bytes, count, held in
            guard let conn = connections[number], !conn.isClosed else { return }
            conn.wire.enqueue(bytes)
            step(conn, .repliesReleased(count: count, heldBytes: held, outputBytes: bytes.count))
        }
    }

    /// Writes what each connection with new output has.
    func flush() {
        while scheduler.hasDirty {
            scheduler.takeDirty(into: &flushing)
            for slot in flushing {
                guard let conn = bySlot[slot] else { continue }
                run(conn, write(conn))
                afterStep(conn)
            }
        }
    }

    /// A stream message that is already committed goes straight to the output, unless replies
    /// are still held (a monitor's first reply): then it waits behind them, in order.
    func appendOutput(_ conn: ClientConnection, _ bytes: [UInt8]) {
        guard !conn.isClosed, conn.machine.streaming else { return }
        if conn.hasHeldReplies {
            conn.holdBehindLast(bytes)
            afterStep(conn)
            return
        }
        conn.wire.enqueue(bytes)
        step(conn, .outputAdded(bytes: bytes.count))
    }

    /// The connection's open `more` call ended; its next calls may be handled.
    func streamEnded(_ conn: ClientConnection) {
        conn.stream = nil
        step(conn, .streamEnded)
    }

    /// The stream may have more to produce (a monitor fell behind, its backlog set), or is
    /// behind by another amount (which may take it over MaxOutputPerConnection).
    func streamChanged(_ conn: ClientConnection) {
        guard !conn.isClosed, conn.stream != nil else { return }
        noteStream(conn)
        afterStep(conn)
    }

    /// A monitor that is behind the live events is owed `bytes` more of them: only an addition,
    /// unless that takes it over MaxOutputPerConnection (then `afterStep` cuts it off).
    func streamFellBehind(_ conn: ClientConnection, by bytes: Int) {
        guard !conn.isClosed, conn.stream != nil else { return }
        conn.behindBytes += bytes
        conn.machine.streamBehind(bytes: conn.behindBytes)
        if conn.machine.exceedsOutputLimit { afterStep(conn) }
    }

    /// Every live monitor, for event fan-out: the connections with a fan-out Monitor stream (not
    /// an attached app's). One closed or ended during the walk is skipped (its stream is gone);
    /// one that starts meanwhile waits for the next publish.
    func forEachMonitor(_ body: (ClientConnection, MonitorStream) -> Void) {
        for conn in monitors.members.values {
            if case .monitor(let m) = conn.stream, !m.attached, conn.machine.streaming { body(conn, m) }
        }
    }
}
