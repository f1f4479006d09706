import Glibc
import ScenedTestSupport
import Testing
import SceneCore
@testable import SceneStore

/// The files a crash leaves: those of a store that is still open (no checkpoint, no clean
/// close, the commits in the -wal), copied aside; and what went into them.
struct CrashImage {
    let path: String
    var wal: String { path + "-wal" }
    var shm: String { path + "-shm" }
    /// Every session committed, in order; one per commit, with one event each.
    let sessions: [SessionID]
    var lastSequence: UInt64 { sessions.last?.rawValue ?? 0 }

    /// `commits` commits into a live store, then a copy of its files as `name`. With
    /// `wallIndexAfter`, the -shm copied is the one as it was after that many commits (as a
    /// writer stopped in its next commit leaves it).
    static func make(_ dir: TemporaryDirectory, name: String = "image.db", commits: Int,
                     indexAfter: Int? = nil, between: ((SceneStore, Int) throws -> Void)? = nil) throws -> CrashImage {
        let live = dir.file("live-\(name)")
        let store = try SceneStore(path: live, durability: .full)
        defer { store.close() }
        var savedIndex: [UInt8]?
        for n in 1...commits {
            try between?(store, n)
            let id = UInt64(n)
            try store.commit(StoreBatch(sessions: [walSession(id)], apps: n == 1 ? [AppRecord(id: mail)] : [],
                                        events: [walEvent(id)]))
            if n == indexAfter { savedIndex = readWholeFile(live + "-shm") }
        }
        let image = dir.file(name)
        writeBytes(image, try #require(readWholeFile(live)))
        writeBytes(image + "-wal", try #require(readWholeFile(live + "-wal")))
        writeBytes(image + "-shm", try #require(savedIndex ?? readWholeFile(live + "-shm")))
        return CrashImage(path: image, sessions: (1...commits).map { SessionID(UInt64($0)) })
    }
}

func walSession(_ n: UInt64) -> SceneSession {
    SceneSession(id: SessionID(n), app: mail, role: .windowApplication, configurationName: "Default Configuration",
                 userInfo: UserInfo(json: #"{"n":\#(n),"pad":"\#(String(repeating: "w", count: 300))"}"#),
                 restoration: nil, footprint: n, condition: .live, sceneState: .background, sceneInstance: 1,
                 createdAt: at(Double(n)), lastActiveAt: at(Double(n)), backgroundSince: at(Double(n)),
                 activations: 0, restores: 0, restoreCostMs: 0, isProtected: false)
}

func walEvent(_ seq: UInt64) -> LifecycleEvent {
    LifecycleEvent(seq: seq, time: at(Double(seq)), name: .configurationForConnecting, app: mail, session: SessionID(seq),
                   sceneInstance: 1, state: .scene(.unattached), appState: .background, cause: .request, detail: .none)
}

/// What SQLite itself replays from `path` (a copy, so the original stays as it is): the
/// session ids in the sessions table.
func sessionsSQLiteReplays(_ path: String, in dir: TemporaryDirectory) throws -> [Int64] {
    let copy = dir.file("sqlite-view-\(UInt32.random(in: 0...UInt32.max)).db")
    for suffix in ["", "-wal"] {
        if let bytes = readWholeFile(path + suffix) { writeBytes(copy + suffix, bytes) }
    }
    return try withConnection(copy) { db in
        try db.texts("SELECT id FROM sessions ORDER BY id", "test").compactMap { Int64($0) }
    }
}
