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

/// A -wal file read with nothing but the layout of sqlite.org/fileformat2.html §4 (not the
/// store's own reader, which is what is under test).
struct WALBytes {
    var bytes: [UInt8]

    init(_ path: String) throws { bytes = try #require(readWholeFile(path)) }

    func be32(_ offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    var pageSize: Int { Int(be32(8)) }
    var frameSize: Int { pageSize + 24 }
    var frameCount: Int { (bytes.count - 32) / frameSize }
    /// Where frame `k` (from 1) starts.
    func offset(_ k: Int) -> Int { 32 + (k - 1) * frameSize }
    func isCommit(_ k: Int) -> Bool { be32(offset(k) + 4) != 0 }
    var commitFrames: [Int] { (1...frameCount).filter(isCommit) }

    func write(_ path: String) { writeBytes(path, bytes) }

    /// Rewrites every checksum with big-endian words (magic 0x377f0683), as a big-endian host's
    /// SQLite writes them: the algorithm of §4.
    mutating func rewriteChecksums(bigEndian: Bool) {
        func word(_ i: Int) -> UInt32 {
            bigEndian ? be32(i) : bytes[i..<i + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }
        func sum(_ range: Range<Int>, _ s: (UInt32, UInt32)) -> (UInt32, UInt32) {
            var (a, b) = s
            for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                a = a &+ word(i) &+ b
                b = b &+ word(i + 4) &+ a
            }
            return (a, b)
        }
        func put(_ value: UInt32, at i: Int) {
            for k in 0..<4 { bytes[i + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(k))) }
        }
        put(bigEndian ? 0x377F_0683 : 0x377F_0682, at: 0)
        var s = sum(0..<24, (0, 0))
        put(s.0, at: 24)
        put(s.1, at: 28)
        for k in 1...frameCount {
            let o = offset(k)
            s = sum(o..<o + 8, s)
            s = sum(o + 24..<o + frameSize, s)
            put(s.0, at: o + 16)
            put(s.1, at: o + 20)
        }
    }
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
