import Glibc

/// Whole-file reads and short writes for /proc and cgroupfs, where one read(2) or write(2) is
/// the unit the kernel answers (a write's error is the operation's error).
enum SystemFiles {
    /// The file's content, or the errno of open/read.
    static func read(_ path: String) -> Result<String, ProcessKitError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(ProcessKitError("read", path, code: errno)) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(ProcessKitError("read", path, code: errno))
            }
            bytes += chunk[0..<n]
        }
        return .success(String(decoding: bytes, as: UTF8.self))
    }

    /// Writes `text` in one write(2) to an existing file.
    static func write(_ path: String, _ text: String) throws(ProcessKitError) {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ProcessKitError("write", path, code: errno) }
        defer { close(fd) }
        var text = text
        let n = text.withUTF8 { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard n == text.utf8.count else { throw ProcessKitError("write", path, code: n < 0 ? errno : EIO) }
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The numeric entries of /proc: every pid (thread group leaders).
    static func processIDs() -> [pid_t] {
        guard let dir = opendir("/proc") else { return [] }
        defer { closedir(dir) }
        var pids: [pid_t] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let pid = pid_t(name) { pids.append(pid) }
        }
        return pids
    }
}
