import Glibc

/// A private directory under /tmp, removed (with everything in it) when released.
final class TemporaryDirectory {
    let path: String

    init(prefix: String = "scened-dur") {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { removeTree(path) }
}

/// rm -rf, without spawning anything.
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { removeTree(path + "/" + name) }
        }
        rmdir(path)
    } else {
        unlink(path)
    }
}

func readWholeFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        bytes += buffer[..<n]
    }
    return bytes
}

func readTextFile(_ path: String) -> String {
    readWholeFile(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
}

func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw TestFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        guard n > 0 else { throw TestFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
        offset += n
    }
}

func writeTextFile(_ path: String, _ text: String) throws { try writeFile(path, Array(text.utf8)) }

/// Copies a file; false if the source does not exist.
@discardableResult
func copyFile(_ from: String, to: String) throws -> Bool {
    guard let bytes = readWholeFile(from) else { return false }
    try writeFile(to, bytes)
    return true
}

func fileExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}

func fileSize(_ path: String) -> Int? {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : nil
}

func makeDirectory(_ path: String) throws {
    guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
        throw TestFailure("mkdir \(path): \(String(cString: strerror(errno)))")
    }
}

/// Names in a directory, sorted (without . and ..).
func directoryEntries(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}

/// Writes zeros to `path` until the file system is full (ENOSPC); returns the bytes written.
func fillUntilFull(_ path: String) throws -> Int {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw TestFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    let chunk = [UInt8](repeating: 0x5a, count: 4096)
    var total = 0
    while true {
        let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        if n > 0 { total += n; continue }
        let code = errno
        if n < 0 && code == EINTR { continue }
        if n < 0 && code == ENOSPC { break }
        throw TestFailure("filling \(path): \(String(cString: strerror(code)))")
    }
    // Byte-sized writes take the last partial block.
    var one: UInt8 = 0x5a
    while write(fd, &one, 1) == 1 { total += 1 }
    return total
}

/// Writes to a closed socket or pipe must fail with EPIPE rather than kill the test runner.
let ignoreSIGPIPE: Void = {
    signal(SIGPIPE, SIG_IGN)
}()
