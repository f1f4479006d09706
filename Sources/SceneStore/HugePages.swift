import Glibc

/// Transparent huge pages for a large array about to be filled: 2 MiB pages instead of 4 KiB
/// ones, so filling it takes one page fault where it would take 512, each of which zeroes a
/// page under the process's memory lock.
/// Only whole huge pages inside the range are advised; the kernel may still decline.
enum HugePages {
    static let size = 2 << 20

    static func advise(_ start: UnsafeMutableRawPointer, bytes: Int) {
        guard bytes >= 2 * size else { return }
        adviseWholePages(start, bytes: bytes, pageSize: size, MADV_HUGEPAGE)
    }

    /// Memory no longer used (uninitialized again) handed back: the whole pages inside the range.
    static func release(_ start: UnsafeMutableRawPointer, bytes: Int) {
        adviseWholePages(start, bytes: bytes, pageSize: Int(sysconf(Int32(_SC_PAGESIZE))), MADV_DONTNEED)
    }

    /// madvise on the pages of `pageSize` that lie wholly inside the range, if any.
    private static func adviseWholePages(_ start: UnsafeMutableRawPointer, bytes: Int, pageSize: Int, _ advice: Int32) {
        let first = (Int(bitPattern: start) + pageSize - 1) & ~(pageSize - 1)
        let end = (Int(bitPattern: start) + bytes) & ~(pageSize - 1)
        guard end > first, let aligned = UnsafeMutableRawPointer(bitPattern: first) else { return }
        _ = madvise(aligned, end - first, advice)
    }
}
