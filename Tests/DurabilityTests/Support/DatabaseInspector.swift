import Glibc
import ScenedTestSupport
import Varlink

/// Reads a scened database from outside the daemon, with python3's sqlite3 module (the tests
/// must not trust scened's own reader to judge what scened wrote).
struct DatabaseInspector {
    let python: String
    let scriptPath: String
    let directory: String

    /// Writes the helper script into `directory`.
    init(directory: String) throws {
        python = try SystemTools.require("python3", for: "reading the database from outside scened (sqlite3 module)")
        self.directory = directory
        scriptPath = directory + "/inspect_db.py"
        try writeTextFile(scriptPath, Self.script)
    }

    private func runScript(_ arguments: [String], wrapper: [String] = []) throws -> JSONObject {
        let result = try run(wrapper + [python, scriptPath] + arguments, in: directory, timeout: 60)
        guard result.status == 0 else { throw TestFailure("database inspection failed: \(result.summary)") }
        guard case .object(let object)? = try? JSONParser.parse(result.stdout) else {
            throw TestFailure("database inspection printed no JSON object: \(result.summary)")
        }
        return object
    }

    /// PRAGMA integrity_check, in full.
    func integrityCheck(_ path: String, wrapper: [String] = []) throws -> [String] {
        let out = try runScript(["integrity", path], wrapper: wrapper)
        return out["integrity"]?.arrayValue?.compactMap(\.stringValue) ?? ["(no answer)"]
    }

    func setUserVersion(_ path: String, _ version: Int) throws {
        _ = try runScript(["set-user-version", path, String(version)])
    }

    /// Runs SQL statements with the schema's CHECKs off, as damage on disk would bypass them.
    func damage(_ path: String, _ sql: String) throws {
        _ = try runScript(["exec", path, sql])
    }

    /// The rows of a query, each as its values' text.
    func query(_ path: String, _ sql: String) throws -> [[String]] {
        let out = try runScript(["query", path, sql])
        return (out["rows"]?.arrayValue ?? []).map { ($0.arrayValue ?? []).map { $0.stringValue ?? "\($0)" } }
    }

    /// PRAGMA wal_checkpoint(PASSIVE) on a database a daemon has open (SQLite's own locks
    /// allow it): the daemon's next write then starts the log over from its first frame.
    func checkpoint(_ path: String) throws -> [Int64] {
        let out = try runScript(["checkpoint", path])
        return out["checkpoint"]?.arrayValue?.compactMap(\.intValue) ?? []
    }

    /// The page size and the page numbers of the sessions table's leaves (dbstat).
    func sessionLeafPages(_ path: String) throws -> (pageSize: Int, pages: [Int]) {
        let out = try runScript(["session-pages", path])
        return (Int(out["page_size"]?.intValue ?? 0), out["pages"]?.arrayValue?.compactMap { $0.intValue.map(Int.init) } ?? [])
    }

    /// Everything the crash test checks, with the event log's rows above `after` in full and a
    /// digest of the rows up to it.
    func dump(_ path: String, eventsAfter after: UInt64, wrapper: [String] = []) throws -> DatabaseDump {
        try DatabaseDump(try runScript(["dump", path, String(after)], wrapper: wrapper))
    }

    static let script = #"""
import hashlib, json, sqlite3, sys

def connect(path):
    # mode=rw: never create a database where none is.
    return sqlite3.connect('file:' + path + '?mode=rw', uri=True, isolation_level=None)

def blob(v):
    if v is None: return None
    if isinstance(v, bytes): return 'hex:' + v.hex()
    return v

def main():
    cmd, path = sys.argv[1], sys.argv[2]
    db = connect(path)
    out = {}
    if cmd == 'integrity':
        out['integrity'] = [r[0] for r in db.execute('PRAGMA integrity_check')]
    elif cmd == 'exec':
        db.execute('PRAGMA ignore_check_constraints = ON')
        db.executescript(sys.argv[3])
    elif cmd == 'query':
        out['rows'] = [[None if v is None else str(blob(v)) for v in r] for r in db.execute(sys.argv[3])]
    elif cmd == 'checkpoint':
        out['checkpoint'] = list(db.execute('PRAGMA wal_checkpoint(PASSIVE)').fetchone())
    elif cmd == 'set-user-version':
        db.execute('PRAGMA user_version = %d' % int(sys.argv[3]))
    elif cmd == 'session-pages':
        out['page_size'] = db.execute('PRAGMA page_size').fetchone()[0]
        out['pages'] = [r[0] for r in db.execute(
            "SELECT pageno FROM dbstat WHERE name = 'sessions' AND pagetype = 'leaf' ORDER BY pageno")]
    elif cmd == 'dump':
        after = int(sys.argv[3])
        out['integrity'] = [r[0] for r in db.execute('PRAGMA integrity_check')]
        out['user_version'] = db.execute('PRAGMA user_version').fetchone()[0]
        tables = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'"))
        out['tables'] = tables
        if 'sessions' in tables:
            db.execute('BEGIN')
            out['counters'] = list(db.execute(
                'SELECT clock, next_sequence, next_session, next_task FROM counters WHERE id = 1').fetchone() or [])
            out['apps'] = [[r[0], r[1], r[2], blob(r[3]), r[4], r[5], r[6]] for r in db.execute(
                'SELECT ref, id, process, pending_discards, base_footprint, idle_since, background_entered_at '
                'FROM apps ORDER BY ref')]
            out['sessions'] = [[r[0], r[1], r[2], r[3], r[4], blob(r[5]), r[6], r[7], r[8]] for r in db.execute(
                'SELECT id, app, condition, scene_state, user_info, restoration, footprint, scene_instance, protected '
                'FROM sessions ORDER BY id')]
            out['tasks'] = [list(r) for r in db.execute(
                'SELECT token, app, session, name, began_at FROM tasks ORDER BY token')]
            count, lo, hi = db.execute('SELECT count(*), min(seq), max(seq) FROM events').fetchone()
            out['event_count'], out['event_min'], out['event_max'] = count, lo, hi
            h = hashlib.sha256()
            upto = None
            new = []
            for r in db.execute('SELECT seq, time, name, app, session, scene_instance, state, app_state, cause, extra '
                                'FROM events ORDER BY seq'):
                if upto is None and r[0] > after:
                    upto = h.hexdigest()
                h.update(repr((r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], blob(r[9]))).encode())
                if r[0] > after:
                    new.append([r[0], r[2], r[3], r[4], r[6], r[8], blob(r[9])])
            out['hash_upto'] = upto if upto is not None else h.hexdigest()
            out['hash_all'] = h.hexdigest()
            out['new_events'] = new
            db.execute('COMMIT')
    db.close()
    print(json.dumps(out))

main()
"""#
}

/// What the crash test reads from a database (see DatabaseInspector.script, "dump").
struct DatabaseDump {
    struct App {
        var ref: Int64; var id: String; var process: Int64; var pendingDiscards: [UInt64]; var baseFootprint: UInt64
        var idleSince: Int64?; var backgroundEnteredAt: Int64?
    }
    struct Session {
        var id: UInt64; var appRef: Int64; var condition: Int64; var sceneState: Int64
        var userInfo: String; var restoration: String?; var footprint: UInt64; var sceneInstance: Int64
        var protected: Bool
    }
    struct Task { var token: UInt64; var appRef: Int64; var session: UInt64?; var name: String; var beganAt: Int64 }
    struct Event { var seq: UInt64; var name: Int64; var appRef: Int64; var session: UInt64?; var state: Int64; var cause: Int64; var extra: [UInt8] }

    var integrity: [String]
    var userVersion: Int64
    var hasSchema: Bool
    var nextSequence: UInt64 = 1
    var nextSession: UInt64 = 1
    var nextTask: UInt64 = 1
    var apps: [App] = []
    var sessions: [Session] = []
    var tasks: [Task] = []
    var eventCount: UInt64 = 0
    var eventMin: UInt64?
    var eventMax: UInt64?
    var hashUpTo = ""
    var hashAll = ""
    var newEvents: [Event] = []

    init(_ o: JSONObject) throws {
        integrity = o["integrity"]?.arrayValue?.compactMap(\.stringValue) ?? []
        userVersion = o["user_version"]?.intValue ?? -1
        hasSchema = o["tables"]?.arrayValue?.contains(.string("sessions")) ?? false
        guard hasSchema else { return }
        func int(_ v: JSONValue?) throws -> Int64 {
            guard let i = v?.intValue else { throw TestFailure("dump: expected an integer, got \(v ?? .null)") }
            return i
        }
        func uint(_ v: JSONValue?) throws -> UInt64 { UInt64(bitPattern: try int(v)) }
        let counters = o["counters"]?.arrayValue ?? []
        guard counters.count == 4 else { throw TestFailure("dump: the counters row is missing") }
        nextSequence = try uint(counters[1])
        nextSession = try uint(counters[2])
        nextTask = try uint(counters[3])
        for r in o["apps"]?.arrayValue ?? [] {
            let pending = try Self.sessionList(Self.bytes(r[3]))
            apps.append(App(ref: try int(r[0]), id: r[1]?.stringValue ?? "", process: try int(r[2]), pendingDiscards: pending,
                            baseFootprint: try uint(r[4]), idleSince: r[5]?.intValue, backgroundEnteredAt: r[6]?.intValue))
        }
        for r in o["sessions"]?.arrayValue ?? [] {
            sessions.append(Session(id: try uint(r[0]), appRef: try int(r[1]), condition: try int(r[2]),
                                    sceneState: try int(r[3]), userInfo: r[4]?.stringValue ?? "",
                                    restoration: r[5]?.stringValue, footprint: try uint(r[6]),
                                    sceneInstance: try int(r[7]), protected: try int(r[8]) != 0))
        }
        for r in o["tasks"]?.arrayValue ?? [] {
            tasks.append(Task(token: try uint(r[0]), appRef: try int(r[1]),
                              session: r[2]?.intValue.map { UInt64(bitPattern: $0) }, name: r[3]?.stringValue ?? "",
                              beganAt: try int(r[4])))
        }
        eventCount = try uint(o["event_count"])
        eventMin = o["event_min"]?.intValue.map { UInt64(bitPattern: $0) }
        eventMax = o["event_max"]?.intValue.map { UInt64(bitPattern: $0) }
        hashUpTo = o["hash_upto"]?.stringValue ?? ""
        hashAll = o["hash_all"]?.stringValue ?? ""
        for r in o["new_events"]?.arrayValue ?? [] {
            newEvents.append(Event(seq: try uint(r[0]), name: try int(r[1]), appRef: try int(r[2]),
                                   session: r[3]?.intValue.map { UInt64(bitPattern: $0) }, state: try int(r[4]),
                                   cause: try int(r[5]), extra: try Self.bytes(r[6])))
        }
    }

    /// A "hex:..." blob as bytes; nil or absent is empty.
    static func bytes(_ v: JSONValue?) throws -> [UInt8] {
        guard let text = v?.stringValue else { return [] }
        guard text.hasPrefix("hex:") else { throw TestFailure("dump: expected a blob, got text \(text)") }
        let hex = Array(text.utf8.dropFirst(4))
        guard hex.count % 2 == 0 else { throw TestFailure("dump: odd hex length") }
        func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : c - 87 }
        return stride(from: 0, to: hex.count, by: 2).map { nibble(hex[$0]) << 4 | nibble(hex[$0 + 1]) }
    }

    /// Session id lists as scened encodes them (SceneStore's RowCoding): LEB128 count, then ids.
    static func sessionList(_ bytes: [UInt8], from start: Int = 0) throws -> [UInt64] {
        guard !bytes.isEmpty else { return [] }
        var i = start
        func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard i < bytes.count, shift < 64 else { throw TestFailure("dump: malformed varint in \(bytes)") }
                let b = bytes[i]
                i += 1
                value |= UInt64(b & 0x7f) << shift
                if b & 0x80 == 0 { return value }
                shift += 7
            }
        }
        let n = try varint()
        var ids: [UInt64] = []
        for _ in 0..<n { ids.append(try varint()) }
        return ids
    }

    /// The sessions an event's detail names: didDiscardSceneSessions (detail tag 2) and
    /// terminated (tag 4, after the reason byte).
    func detailSessions(_ e: Event) throws -> [UInt64] {
        guard let tag = e.extra.first else { return [] }
        switch tag {
        case 2: return try Self.sessionList(e.extra, from: 1)
        case 4: return try Self.sessionList(e.extra, from: 2)
        default: return []
        }
    }
}

/// Event names as SceneStore stores them (StorageCodes), part of the schema.
enum StoredEventName {
    static let codes: [String: Int64] = [
        "didFinishLaunching": 0, "configurationForConnecting": 1, "didDiscardSceneSessions": 2,
        "didReceiveMemoryWarning": 3, "willTerminate": 4, "backgroundTaskWillExpire": 5, "willConnectTo": 6,
        "willEnterForeground": 7, "didBecomeActive": 8, "willResignActive": 9, "didEnterBackground": 10,
        "didDisconnect": 11, "suspended": 12, "resumed": 13, "terminated": 14,
    ]
    static func name(_ code: Int64) -> String { codes.first { $0.value == code }?.key ?? "#\(code)" }
}
