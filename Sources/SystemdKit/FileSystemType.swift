import CSystemd
import Glibc

/// The kind of file system a descriptor lives on (fstatfs), e.g. to tell a kernel pressure
/// file (procfs, cgroup2) from an ordinary file that merely has the same content.
public enum FileSystemType {
    public static let proc: UInt64 = 0x9fa0
    public static let cgroup2: UInt64 = 0x6367_7270

    public static func magic(of fd: Int32) -> UInt64? {
        var info = statfs()
        guard fstatfs(fd, &info) == 0 else { return nil }
        return UInt64(bitPattern: Int64(info.f_type))
    }
}
