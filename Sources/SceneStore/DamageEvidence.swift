import Glibc

/// Copies of a damaged database's files (the database, its write-ahead log and wal-index),
/// taken before SQLite opens or anything rewrites them, into `damaged-<UTC time>/` beside the
/// database (mode 0700, each copy and the directory fsynced).
///
/// A daemon refused at start-up is restarted by systemd, and would copy the same files again
/// each time: each directory records the size and modification time of what it copied
/// (`SOURCES`), and while those still match, that copy is the evidence and no new one is made.
public struct DamageEvidence: Sendable, Equatable {
    /// Where the copies are.
    public var directory: String
    /// True when an earlier copy of these same files was found and used.
    public var reused: Bool

    static let suffixes = ["", "-wal", "-shm"]
    static let sourcesName = "SOURCES"

    static func preserve(databasePath: String, now: time_t = time(nil)) throws(StoreError) -> DamageEvidence {
        let (parent, base) = split(databasePath)
        let sources = describeSources(databasePath)
        for name in directoryEntries(parent) where name.hasPrefix("damaged-") {
            let candidate = parent + "/" + name
            if readText(candidate + "/" + sourcesName) == sources {
                return DamageEvidence(directory: candidate, reused: true)
            }
        }
        let directory = try makeDirectory(in: parent, now: now, for: databasePath)
        for suffix in suffixes {
            try copy(databasePath + suffix, to: directory + "/" + base + suffix, evidenceOf: databasePath)
        }
        // Written last: a copy cut short has no SOURCES and is never taken for a whole one.
        try writeFile(directory + "/" + sourcesName, Array(sources.utf8), evidenceOf: databasePath)
        try sync(directory, evidenceOf: databasePath)
        try sync(parent, evidenceOf: databasePath)
        return DamageEvidence(directory: directory, reused: false)
    }

    /// One line per file that exists: name, size, modification time (ns).
    static func describeSources(_ databasePath: String) -> String {
        var lines = ""
        for suffix in suffixes {
            var st = stat()
            guard stat(databasePath + suffix, &st) == 0 else { continue }
            let name = split(databasePath + suffix).1
            lines += "\(name) \(st.st_size) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)\n"
        }
        return lines
    }

    private static func makeDirectory(in parent: String, now: time_t, for path: String) throws(StoreError) -> String {
        var t = now
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let stamp = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
        var attempt = 1
        while true {
            let name = parent + "/damaged-" + stamp + (attempt == 1 ? "" : "-\(attempt)")
            if mkdir(name, 0o700) == 0 { return name }
            let err = errno
            guard err == EEXIST, attempt < 1000 else {
                throw StoreError(errno: err, path: path, context: "creating \(name) to keep copies of the damaged files")
            }
            attempt += 1
        }
    }

    private static func copy(_ source: String, to target: String, evidenceOf path: String) throws(StoreError) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        if input < 0 {
            if errno == ENOENT { return }
            throw StoreError(errno: errno, path: path, context: "reading \(source) to copy it aside")
        }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw StoreError(errno: errno, path: path, context: "creating \(target)") }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw StoreError(errno: errno, path: path, context: "reading \(source) to copy it aside") }
            if n == 0 { break }
            try writeAll(output, buffer, count: n, target: target, evidenceOf: path)
        }
        guard fsync(output) == 0 else { throw StoreError(errno: errno, path: path, context: "syncing \(target)") }
    }

    private static func writeFile(_ target: String, _ bytes: [UInt8], evidenceOf path: String) throws(StoreError) {
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError(errno: errno, path: path, context: "creating \(target)") }
        defer { close(fd) }
        try writeAll(fd, bytes, count: bytes.count, target: target, evidenceOf: path)
        guard fsync(fd) == 0 else { throw StoreError(errno: errno, path: path, context: "syncing \(target)") }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], count: Int, target: String,
                                 evidenceOf path: String) throws(StoreError) {
        var done = 0
        while done < count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw StoreError(errno: errno, path: path, context: "writing \(target)") }
            done += n
        }
    }

    private static func sync(_ directory: String, evidenceOf path: String) throws(StoreError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError(errno: errno, path: path, context: "opening \(directory)") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StoreError(errno: errno, path: path, context: "syncing \(directory)") }
    }

    /// The directory and the file name.
    static func split(_ path: String) -> (String, String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    private static func directoryEntries(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            names.append(name)
        }
        return names.sorted()
    }

    private static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
