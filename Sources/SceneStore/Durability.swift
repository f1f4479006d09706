/// How hard a commit tries to reach the disk before the call is answered.
public enum Durability: String, Sendable, CaseIterable {
    /// A commit survives power loss: SQLite runs with synchronous=NORMAL and the store
    /// fdatasyncs the write-ahead log itself after each COMMIT (`SceneStore.syncLog`), so that
    /// the daemon learns of the commit twice: written (a crash of scened keeps it) and durable.
    case full
    /// synchronous=NORMAL: a commit survives the process crashing (kill -9), not power loss; the
    /// WAL is fsynced at checkpoints.
    case normal
    /// synchronous=OFF: nothing is fsynced. Benchmarks only.
    case off

    /// SQLite's own setting. Under `full` the per-commit sync is the store's (see `syncLog`):
    /// in WAL mode, FULL differs from NORMAL by that one sync only.
    var pragma: String {
        switch self {
        case .full, .normal: "NORMAL"
        case .off: "OFF"
        }
    }

    /// Whether a commit is durable only once `syncLog` has run after it.
    public var syncsAfterCommit: Bool { self == .full }
}
