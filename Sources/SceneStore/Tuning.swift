/// Sizes, and why.
enum Tuning {
    /// A checkpoint every ~64 MB of WAL rather than SQLite's 4 MB. Under a steady stream of
    /// commits the same hot pages (sessions being switched, the log's tail) are rewritten in the
    /// WAL many times but copied to the main file once per checkpoint, and each checkpoint
    /// fsyncs, stalling the commit thread: fewer, larger checkpoints keep the commit rate steady.
    static let walAutocheckpointPages: Int32 = 16000
    /// `checkpointNear` holds this many frames (8 MiB) before the checkpoint's length: more
    /// than a batch small enough to be written on the daemon's loop can add.
    static let checkpointMarginFrames: Int32 = 2048
    /// The WAL file is cut back to this after a checkpoint, so a burst does not leave it large.
    static let journalSizeLimit = 80 << 20
    /// 16 MiB of page cache (negative: KiB). Caching every page of a large sessions table would
    /// keep that much in the daemon for little gain: a miss is one pread from the kernel's page
    /// cache. load() releases what its full scan brought in.
    static let cacheSizeKiB = -16384
    /// The saved-data reader's page cache: a point read touches a few b-tree pages and the
    /// payload's overflow pages, read once; the kernel caches them anyway.
    static let readerCacheKiB = 1024
    /// The event log is trimmed once it holds this fraction of its capacity too many, so a trim
    /// deletes a long run of rows at once instead of a few rows per commit.
    static func trimSlack(capacity: Int) -> Int { max(capacity / 8, 64) }

    /// The most session ids or sequence numbers one commit may allocate, and the most task
    /// tokens; a batch that goes further is refused. No real batch comes near either (the
    /// first would hold billions of events, the second 65,536 new background tasks). The task
    /// cap is what bounds the tokens a damaged log's lost transactions can have handed out: a
    /// token, unlike a sequence number or a session id, may leave no row (begun and ended in
    /// one batch). See SceneStore+Recovery.
    static let maxAllocationsPerCommit: UInt64 = 1 << 32
    static let maxTaskTokensPerCommit: UInt64 = 1 << 16
    /// The same for notification ids: one queued and delivered in one batch leaves no row
    /// either (its event may be trimmed, or the log off).
    static let maxNotificationsPerCommit: UInt64 = 1 << 16
    /// Open ids: the same bound as notifications' (the recovery raises both by one allowance).
    static let maxOpensPerCommit: UInt64 = maxNotificationsPerCommit
    /// The fewest bytes a row takes in a table page: a cell is never under 4 bytes, plus its
    /// 2-byte pointer. Lost bytes / this bounds the rows lost frames can hold.
    static let minimumRowBytes: UInt64 = 6
    /// Identifiers and sequence numbers are allocated from 1 upwards and can never come near
    /// this; a stored one at or beyond it is damage. Well below 2^63, so that SQLite (whose
    /// integers are signed) keeps every counter positive, even raised by a recovery.
    static let storedNumberLimit: UInt64 = 1 << 62
}
