import SceneCore

/// The variable parts of rows: event detail and cause in the `extra` blob, pending discards.
/// Enumerations use `StorageCodes`; the tags below are part of the schema too and are never
/// renumbered.
enum RowCoding {
    // MARK: Cause: the kind is a column; a reclaim note or cap name goes into the extra blob.

    static func causeCode(_ cause: EventCause) -> Int64 {
        switch cause {
        case .request: 0
        case .timer: 1
        case .reclaim: 2
        case .cap: 3
        case .restore: 4
        case .shutdown: 5
        case .interruption: 6
        case .lock: 7
        case .session: 8
        case .idle: 9
        case .sleep: 10
        case .background: 11
        }
    }

    // MARK: Detail tags in the extra blob.

    static let detailNone: UInt8 = 0
    static let detailConnect: UInt8 = 1
    static let detailDiscarded: UInt8 = 2
    static let detailTask: UInt8 = 3
    static let detailTerminated: UInt8 = 4
    static let detailWake: UInt8 = 5
    /// willConnectTo opened with URLs or activities (tag 1's fields, then the payload).
    static let detailConnectOpen: UInt8 = 6
    /// openURLContexts, continueUserActivity.
    static let detailOpen: UInt8 = 7

    static let restorationAbsent: UInt8 = 0
    static let restorationJSON: UInt8 = 1
    static let restorationBytes: UInt8 = 2

    /// The event's `extra` column: its detail, then its cause's payload. nil (SQL NULL) for the
    /// common event that has neither, so most rows carry no blob at all.
    static func extra(detail: EventDetail, cause: EventCause) -> [UInt8]? {
        var w = ByteWriter()
        switch detail {
        case .none:
            switch cause {
            case .reclaim, .cap: w.byte(detailNone)
            case .request, .timer, .restore, .shutdown, .interruption, .lock, .session, .idle, .sleep, .background:
                return nil
            }
        case .connect(let restoration, let reconnect, let open):
            w.byte(open == nil ? detailConnect : detailConnectOpen)
            w.byte(reconnect ? 1 : 0)
            switch restoration {
            case nil: w.byte(restorationAbsent)
            case .json(let text)?: w.byte(restorationJSON); w.string(text)
            case .bytes(let bytes)?: w.byte(restorationBytes); w.data(bytes)
            }
            if let open { RoutingCoding.payload(open, into: &w) }
        case .open(let payload):
            w.byte(detailOpen)
            RoutingCoding.payload(payload, into: &w)
        case .discarded(let ids):
            w.byte(detailDiscarded)
            sessionIDs(ids, into: &w)
        case .task(let token, let name):
            w.byte(detailTask)
            w.varint(token.rawValue)
            w.string(name)
        case .terminated(let reason, let archived):
            w.byte(detailTerminated)
            w.byte(StorageCodes.code(reason))
            sessionIDs(archived, into: &w)
        case .wake(let wake):
            w.byte(detailWake)
            w.byte(UInt8(StorageCodes.code(wake.kind)))
            w.string(wake.identifier)
            if let payload = wake.payload { w.byte(1); w.string(payload) } else { w.byte(0) }
            w.varint(UInt64(bitPattern: wake.deadline.microseconds))
        }
        switch cause {
        case .reclaim(let note):
            w.string(note.level)
            w.varint(note.usageBefore)
            w.varint(note.usageAfter)
            w.varint(note.budget)
            if let score = note.score { w.byte(1); w.double(score) } else { w.byte(0) }
            w.string(note.reason)
        case .cap(let name):
            w.string(name)
        case .request, .timer, .restore, .shutdown, .interruption, .lock, .session, .idle, .sleep, .background:
            break
        }
        return w.bytes
    }

    /// Decodes the `cause` column and the `extra` blob (empty when the column was NULL).
    static func detailAndCause(causeCode: Int64, extra: UnsafeRawBufferPointer) throws(ByteReader.Malformed)
        -> (EventDetail, EventCause) {
        var r = ByteReader(extra)
        var detail = EventDetail.none
        if extra.count > 0 {
            switch try r.byte() {
            case detailNone:
                break
            case detailConnect, detailConnectOpen:
                let withOpen = extra[0] == detailConnectOpen
                let reconnect = try r.byte()
                guard reconnect <= 1 else { throw .init() }
                let restoration: RestorationData?
                switch try r.byte() {
                case restorationAbsent: restoration = nil
                case restorationJSON:
                    // Written into replies verbatim: it must be the JSON object it was.
                    var text = try r.string()
                    guard text.withUTF8({ JSONCheck.isObject($0) }) else { throw .init() }
                    restoration = .json(text)
                case restorationBytes: restoration = .bytes(try r.data())
                default: throw .init()
                }
                let open = withOpen ? try RoutingCoding.payload(&r) : nil
                detail = .connect(restoration: restoration, reconnect: reconnect == 1, open: open)
            case detailOpen:
                detail = .open(try RoutingCoding.payload(&r))
            case detailDiscarded:
                detail = .discarded(try sessionIDs(&r))
            case detailTask:
                let token = TaskToken(try r.varint())
                detail = .task(token, name: try r.string())
            case detailTerminated:
                guard let reason = StorageCodes.terminationReason(try r.byte()) else { throw .init() }
                detail = .terminated(reason: reason, archived: try sessionIDs(&r))
            case detailWake:
                detail = .wake(try wake(&r))
            default:
                throw .init()
            }
        }
        let cause: EventCause
        switch causeCode {
        case 0: cause = .request
        case 1: cause = .timer
        case 2:
            let level = try r.string()
            let before = try r.varint()
            let after = try r.varint()
            let budget = try r.varint()
            let score: Double?
            switch try r.byte() {
            case 0: score = nil
            case 1: score = try r.double()
            default: throw .init()
            }
            cause = .reclaim(ReclaimNote(level: level, usageBefore: before, usageAfter: after, budget: budget,
                                         score: score, reason: try r.string()))
        case 3: cause = .cap(try r.string())
        case 4: cause = .restore
        case 5: cause = .shutdown
        case 6: cause = .interruption
        case 7: cause = .lock
        case 8: cause = .session
        case 9: cause = .idle
        case 10: cause = .sleep
        case 11: cause = .background
        default: throw .init()
        }
        guard r.isAtEnd else { throw .init() }
        return (detail, cause)
    }

    static func wake(_ r: inout ByteReader) throws(ByteReader.Malformed) -> WakeDetail {
        guard let kind = StorageCodes.wakeKind(Int64(try r.byte())) else { throw .init() }
        let identifier = try r.string()
        var payload: String?
        switch try r.byte() {
        case 0: break
        case 1:
            // Written into replies verbatim: it must be the JSON object it was.
            var text = try r.string()
            guard text.withUTF8({ JSONCheck.isObject($0) }) else { throw .init() }
            payload = text
        default: throw .init()
        }
        let deadline = Timestamp(microseconds: Int64(bitPattern: try r.varint()))
        return WakeDetail(kind: kind, identifier: identifier, payload: payload, deadline: deadline)
    }

    // MARK: Session id lists (pending discards, discarded and archived sets), order kept.

    static func sessionIDs(_ ids: [SessionID], into w: inout ByteWriter) {
        w.varint(UInt64(ids.count))
        for id in ids { w.varint(id.rawValue) }
    }

    static func sessionIDs(_ r: inout ByteReader) throws(ByteReader.Malformed) -> [SessionID] {
        let n = try r.varint()
        // Each id takes at least one byte: a count larger than what is left is damage, and must
        // not become a huge allocation.
        guard n <= UInt64(r.buffer.count - r.offset) else { throw .init() }
        var ids: [SessionID] = []
        ids.reserveCapacity(Int(n))
        for _ in 0..<n { ids.append(SessionID(try r.varint())) }
        return ids
    }

    /// An app's pending discards as a blob; nil when there are none (the usual case).
    static func pendingDiscards(_ ids: [SessionID]) -> [UInt8]? {
        guard !ids.isEmpty else { return nil }
        var w = ByteWriter()
        sessionIDs(ids, into: &w)
        return w.bytes
    }

    static func pendingDiscards(_ blob: UnsafeRawBufferPointer) throws(ByteReader.Malformed) -> [SessionID] {
        guard blob.count > 0 else { return [] }
        var r = ByteReader(blob)
        let ids = try sessionIDs(&r)
        guard r.isAtEnd else { throw .init() }
        return ids
    }
}
