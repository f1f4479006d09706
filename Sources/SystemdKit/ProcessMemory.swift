import CSystemd

/// glibc malloc settings for a long-running daemon.
public enum ProcessMemory {
    /// Serves allocations of `threshold` bytes or more (glibc's initial 128 KiB, kept fixed) with their own mappings, returned to the
    /// system when freed. glibc's default threshold grows with every large free, after which
    /// such buffers come from the heap and stay resident: a burst of clients holding large
    /// messages (or a hostile one) would leave the daemon's RSS high for good.
    public static func returnLargeBuffers(threshold: Int32 = 128 << 10) {
        _ = mallopt(M_MMAP_THRESHOLD, threshold)
    }

    /// Hands memory that has been freed back to the system. Freed memory below live allocations
    /// (and in another thread's arena) stays mapped and resident: after restoring its state,
    /// which fills SQLite's page cache with every page and then frees it, the daemon would keep
    /// that much for good. Walks the whole heap: for rare moments only.
    public static func handBackFreed() {
        _ = malloc_trim(0)
    }
}
