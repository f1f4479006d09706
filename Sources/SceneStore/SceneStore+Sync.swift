import Glibc

extension SceneStore {
    /// Under Durability=full, makes the last commit survive power loss: fdatasync of the
    /// write-ahead log. Nothing to do under normal and off.
    ///
    /// Why this is what synchronous=FULL did: in WAL mode FULL and NORMAL differ only at the
    /// end of a commit, where FULL syncs the WAL after writing the transaction's frames (no
    /// padding first: the unix VFS reports powersafe overwrite). Everything else is synced under
    /// NORMAL too: the WAL header written when the log restarts from its beginning, the
    /// directory when the WAL is created, and both files around a checkpoint. So one
    /// fdatasync of the WAL after COMMIT and before the next transaction covers the commit,
    /// including a truncation the first commit after a restart makes.
    ///
    /// The file is opened by name each time rather than kept open: SQLite keeps writing the
    /// same file while its connection is open (a restart rewrites it in place), but a
    /// descriptor of ours would have to be proved to follow it across every path; an open and
    /// a close cost microseconds beside the sync. SQLite holds no POSIX lock on the WAL (its
    /// locks are on the database and the -shm file), so closing this descriptor drops none.
    public func syncLog() throws(StoreError) {
        guard durability.syncsAfterCommit else { return }
        let wal = path + "-wal"
        let fd = Glibc.open(wal, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError(errno: errno, path: wal, context: "opening the log to sync it") }
        defer { Glibc.close(fd) }
        while fdatasync(fd) != 0 {
            guard errno == EINTR else { throw StoreError(errno: errno, path: wal, context: "fdatasync of the log") }
        }
    }
}
