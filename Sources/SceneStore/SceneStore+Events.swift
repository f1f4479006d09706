import CSQLite
import SceneCore

extension SceneStore {
    /// The oldest sequence number the log still answers for, nil when it is empty. The log holds
    /// the events of the last `eventLogCapacity` sequence numbers; older rows awaiting the next
    /// trim are not reported.
    public var oldestLoggedSequence: UInt64? {
        guard eventLogCapacity > 0, let oldest = loggedOldest, let newest = loggedNewest else { return nil }
        let capacity = UInt64(eventLogCapacity)
        return newest >= capacity ? max(oldest, newest - capacity + 1) : oldest
    }

    /// The newest logged sequence number, nil when the log is empty.
    public var newestLoggedSequence: UInt64? { eventLogCapacity > 0 ? loggedNewest : nil }

    /// Logged events with a sequence number greater than `seq`, oldest first, at most `limit`.
    /// Starts at `oldestLoggedSequence` when `seq` is older than the log reaches.
    public func events(after seq: UInt64, limit: Int) throws(StoreError) -> [LifecycleEvent] {
        let (db, st) = try openConnection()
        guard limit > 0, let oldest = oldestLoggedSequence, seq < UInt64(Int64.max) else { return [] }
        let s = st.selectEvents
        defer { s.reset() }
        s.bind(1, max(seq, oldest - 1))
        s.bind(2, Int64(limit))
        var out: [LifecycleEvent] = []
        out.reserveCapacity(min(limit, 4096))
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else { throw db.error(rc, "reading the event log") }
            out.append(try event(s))
        }
    }

    /// Decodes a row of SELECT seq, time, name, app, session, scene_instance, state, app_state,
    /// cause, extra.
    private func event(_ s: Statement) throws(StoreError) -> LifecycleEvent {
        let seq = s.uint64(0)
        guard let name = StorageCodes.eventName(s.int64(2)) else {
            throw corrupt("event #\(seq): unknown name \(s.int64(2))")
        }
        let app = try app(ref: s.int64(3), "event #\(seq)")
        guard let state = StorageCodes.eventState(s.int64(6)) else {
            throw corrupt("event #\(seq): unknown state \(s.int64(6))")
        }
        guard let appState = StorageCodes.applicationState(s.int64(7)) else {
            throw corrupt("event #\(seq): unknown app state \(s.int64(7))")
        }
        let detail: EventDetail
        let cause: EventCause
        do throws(ByteReader.Malformed) {
            (detail, cause) = try RowCoding.detailAndCause(causeCode: s.int64(8), extra: s.blobBytes(9))
        } catch {
            throw corrupt("event #\(seq): detail or cause is malformed")
        }
        return LifecycleEvent(seq: seq, time: s.timestamp(1), name: name, app: app,
                              session: s.isNull(4) ? nil : SessionID(s.uint64(4)),
                              sceneInstance: try uint32(s.int64(5), "event #\(seq): scene instance"),
                              state: state, appState: appState, cause: cause, detail: detail)
    }

    /// Where the log starts and ends on disk: each is one end of the rowid b-tree (one min() or
    /// max() per query, or SQLite scans).
    func readLogBounds(_ db: SQLiteConnection) throws(StoreError) {
        loggedOldest = try db.integer("SELECT min(seq) FROM events", "reading the event log").map { UInt64(bitPattern: $0) }
        loggedNewest = try db.integer("SELECT max(seq) FROM events", "reading the event log").map { UInt64(bitPattern: $0) }
    }
}
