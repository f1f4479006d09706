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
    ///
    /// A row that does not decode is skipped, never returned: it is added to
    /// `quarantinedEvents` (and recorded in the quarantine table with the next commit), and
    /// reading goes on past it, so a damaged row costs its caller that one event.
    public func events(after seq: UInt64, limit: Int) throws(StoreError) -> [LifecycleEvent] {
        let (db, st) = try openConnection()
        guard limit > 0, let oldest = oldestLoggedSequence, seq < UInt64(Int64.max) else { return [] }
        let s = st.selectEvents
        var from = max(seq, oldest - 1)
        var out: [LifecycleEvent] = []
        out.reserveCapacity(min(limit, 4096))
        while out.count < limit {
            let wanted = limit - out.count
            s.bind(1, from)
            s.bind(2, Int64(wanted))
            var read = 0
            while true {
                let rc = s.step()
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else {
                    let error = db.error(rc, "reading the event log")
                    s.reset()
                    throw error
                }
                read += 1
                from = s.uint64(0)
                switch decodeEvent(s) {
                case .success(let event): out.append(event)
                case .failure(let damage): noteDamagedEvent(s.int64(0), damage.reason)
                }
            }
            s.reset()
            if read < wanted { break }
        }
        return out
    }

    struct EventDamage: Error {
        let reason: String
    }

    private func noteDamagedEvent(_ key: Int64, _ reason: String) {
        guard quarantinedEventKeys.insert(key).inserted else { return }
        let row = QuarantinedRow(table: .events, key: key, reason: reason)
        quarantinedEvents.append(row)
        unrecordedQuarantine.append(row)
    }

    /// Decodes and checks a row of SELECT seq, time, name, app, session, scene_instance, state,
    /// app_state, cause, extra.
    private func decodeEvent(_ s: Statement) -> Result<LifecycleEvent, EventDamage> {
        let key = s.int64(0)
        var check = RowCheck(s)
        if !RowCheck.isStoredNumber(key) { check.fail("sequence number \(key) is out of range") }
        let time = check.timestamp(1, "time")
        let nameCode = check.integer(2, "name")
        let name = StorageCodes.eventName(nameCode)
        if check.isValid && name == nil { check.fail("event name \(nameCode) is not one") }
        let appRef = check.integer(3, "app")
        var app: AppID?
        if appRef > 0, appRef < appsByRef.count, let id = appsByRef[Int(appRef)] { app = id }
        if check.isValid && app == nil { check.fail("app reference \(appRef) names no app") }
        let session = check.optionalInteger(4, "session")
        if let session, check.isValid, !RowCheck.isStoredNumber(session) { check.fail("session \(session) is no session id") }
        let sceneInstance = check.uint32(5, "scene_instance")
        let stateCode = check.integer(6, "state")
        let state = StorageCodes.eventState(stateCode)
        if check.isValid && state == nil { check.fail("state \(stateCode) is not one") }
        let appStateCode = check.integer(7, "app_state")
        let appState = StorageCodes.applicationState(appStateCode)
        if check.isValid && appState == nil { check.fail("app state \(appStateCode) is not one") }
        let causeCode = check.integer(8, "cause")
        var decoded: (EventDetail, EventCause)?
        switch s.type(9) {
        case SQLITE_NULL, SQLITE_BLOB:
            if check.isValid {
                do throws(ByteReader.Malformed) {
                    decoded = try RowCoding.detailAndCause(causeCode: causeCode, extra: s.blobBytes(9))
                } catch {
                    check.fail("detail or cause is malformed")
                }
            }
        default:
            check.fail("extra is \(RowCheck.typeName(s.type(9))), not bytes")
        }
        if let problem = check.problem { return .failure(EventDamage(reason: problem)) }
        return .success(LifecycleEvent(seq: UInt64(key), time: time, name: name!, app: app!,
                                       session: session.map { SessionID(UInt64($0)) }, sceneInstance: sceneInstance,
                                       state: state!, appState: appState!, cause: decoded!.1, detail: decoded!.0))
    }

    /// Where the log starts and ends on disk: each is one end of the rowid b-tree (one min() or
    /// max() per query, or SQLite scans).
    func readLogBounds(_ db: SQLiteConnection) throws(StoreError) {
        loggedOldest = try db.integer("SELECT min(seq) FROM events", "reading the event log").map { UInt64(bitPattern: $0) }
        loggedNewest = try db.integer("SELECT max(seq) FROM events", "reading the event log").map { UInt64(bitPattern: $0) }
    }
}
