import CSQLite
import SceneCore

/// Reads the userInfo and restoration data that the daemon left in the store (a start-up that
/// deferred them, or a commit that released them), one session at a time, on the daemon's loop.
///
/// Its own connection: the commit thread owns the store's. In WAL mode this reader sees the
/// last committed transaction and never waits for the writer, and the writer never waits for
/// it; each read is one statement outside any transaction, so it holds no snapshot that would
/// keep a checkpoint from finishing. The payload is checked as load() checks it, and against
/// the size stored beside it: damage found here is an error for the caller that asked, never
/// bytes handed on.
public final class SavedDataReader {
    private let connection: SQLiteConnection
    private let selectUserInfo: Statement
    private let selectRestoration: Statement
    public let path: String

    public init(path: String) throws(StoreError) {
        self.path = path
        let db = try SQLiteConnection(path: path)
        var made: [Statement] = []
        do throws(StoreError) {
            try db.execute("""
                PRAGMA query_only = ON;
                PRAGMA cache_size = -\(Tuning.readerCacheKiB);
                PRAGMA cell_size_check = ON;
                PRAGMA trusted_schema = OFF;
                """, "configuring the saved-data reader")
            made.append(try db.prepare("SELECT user_info, user_info_size FROM sessions WHERE id = ?1",
                                       "preparing the saved-data read"))
            made.append(try db.prepare("SELECT restoration, restoration_size FROM sessions WHERE id = ?1",
                                       "preparing the saved-data read"))
        } catch {
            for s in made { s.finalize() }
            db.close()
            throw error
        }
        connection = db
        selectUserInfo = made[0]
        selectRestoration = made[1]
    }

    deinit {
        selectUserInfo.finalize()
        selectRestoration.finalize()
        connection.close()
    }

    /// The stored userInfo of `id`; `.corrupt` names the session and what is wrong.
    public func userInfo(_ id: SessionID) throws(StoreError) -> UserInfo {
        try read(selectUserInfo, id) { (check: inout RowCheck) -> (UserInfo, Int) in
            let info = UserInfo(json: check.jsonObject(0, "user_info"))
            return (info, info.json.utf8.count)
        }
    }

    /// The stored restoration data of `id` (nil: none).
    public func restoration(_ id: SessionID) throws(StoreError) -> RestorationData? {
        try read(selectRestoration, id) { (check: inout RowCheck) -> (RestorationData?, Int) in
            let data = check.restoration(0, "restoration")
            return (data, data?.byteCount ?? 0)
        }
    }

    /// One column and the size stored beside it, checked against each other. Only the column
    /// asked for: one damaged payload does not make the session's other one unreadable.
    private func read<T>(_ s: Statement, _ id: SessionID, _ decode: (inout RowCheck) -> (T, Int)) throws(StoreError) -> T {
        defer { s.reset() }
        s.bind(1, id.rawValue)
        let rc = s.step()
        if rc == SQLITE_DONE {
            throw StoreError(kind: .corrupt, path: path, message: "session \(id) has no stored row")
        }
        guard rc == SQLITE_ROW else { throw connection.error(rc, "reading the saved data of session \(id)") }
        var check = RowCheck(s)
        let (value, size) = decode(&check)
        let stored = check.integer(1, "size")
        if check.isValid && Int64(size) != stored {
            check.fail("it holds \(size) bytes, its size says \(stored)")
        }
        if let problem = check.problem {
            throw StoreError(kind: .corrupt, path: path, message: "the stored row of session \(id) is damaged: \(problem)")
        }
        return value
    }
}
