/// How hard a commit tries to reach the disk before the call is answered.
public enum Durability: String, Sendable, CaseIterable {
    /// synchronous=FULL: the WAL is fsynced at every commit; a commit survives power loss.
    case full
    /// synchronous=NORMAL: a commit survives the process crashing (kill -9), not power loss; the
    /// WAL is fsynced at checkpoints.
    case normal
    /// synchronous=OFF: nothing is fsynced. Benchmarks only.
    case off

    var pragma: String {
        switch self {
        case .full: "FULL"
        case .normal: "NORMAL"
        case .off: "OFF"
        }
    }
}
