import Glibc

/// The whole file, or nil when it cannot be opened.
public func readWholeFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        bytes += buffer[..<n]
    }
    return bytes
}

/// The file as UTF-8; "" when it cannot be opened (a log not written yet reads as empty).
public func readTextFile(_ path: String) -> String {
    readWholeFile(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
}

/// The file as UTF-8; throws (naming the file and errno) when it cannot be opened.
public func readExistingTextFile(_ path: String) throws -> String {
    guard let bytes = readWholeFile(path) else { throw TestFailure("open \(path): \(errnoText())") }
    return String(decoding: bytes, as: UTF8.self)
}

/// Creates or replaces `path`. A small file goes out in one write(2), so a poller never sees
/// half of it.
public func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw TestFailure("cannot create \(path): \(errnoText())") }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { throw TestFailure("cannot write \(path): \(errnoText())") }
        offset += n
    }
}

public func writeTextFile(_ path: String, _ text: String) throws { try writeFile(path, Array(text.utf8)) }

/// Copies a file; false if the source does not exist.
@discardableResult
public func copyFile(_ from: String, to: String) throws -> Bool {
    guard let bytes = readWholeFile(from) else { return false }
    try writeFile(to, bytes)
    return true
}

/// Whether anything (a dangling symlink too) is at `path`.
public func fileExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}

public func fileSize(_ path: String) -> Int? {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : nil
}

/// mkdir, mode 0700; an existing directory is fine.
public func makeDirectory(_ path: String) throws {
    guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
        throw TestFailure("mkdir \(path): \(errnoText())")
    }
}

/// mkdir -p, mode 0755.
public func makeDirectories(_ path: String) throws {
    var current = ""
    for part in path.split(separator: "/") {
        current += "/" + part
        guard mkdir(current, 0o755) == 0 || errno == EEXIST else {
            throw TestFailure("mkdir \(current): \(errnoText())")
        }
    }
}

/// Names in a directory, sorted (without . and ..); empty when it cannot be read.
public func directoryEntries(_ path: String) -> [String] {
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

/// rm -rf, without spawning anything. Clears the immutable attribute a test may have set
/// (which stops root too); never follows symlinks.
public func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    let type = info.st_mode & S_IFMT
    if type == S_IFDIR || type == S_IFREG { clearImmutable(path) }
    if type == S_IFDIR {
        for name in directoryEntries(path) { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

// MARK: - The immutable attribute (chattr +i)

private let fsIocGetFlags: UInt = 0x8008_6601
private let fsIocSetFlags: UInt = 0x4008_6602
private let fsImmutableFlag = 0x10

/// Sets or clears the immutable attribute; false when the file system does not support it
/// (or this process may not change it).
@discardableResult
public func setImmutable(_ path: String, _ on: Bool) -> Bool {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var flags = 0
    guard ioctl(fd, fsIocGetFlags, &flags) == 0 else { return false }
    flags = on ? flags | fsImmutableFlag : flags & ~fsImmutableFlag
    return ioctl(fd, fsIocSetFlags, &flags) == 0
}

/// Clears the immutable attribute of a regular file or directory if it is set; touches nothing
/// else.
private func clearImmutable(_ path: String) {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var flags = 0
    guard ioctl(fd, fsIocGetFlags, &flags) == 0, flags & fsImmutableFlag != 0 else { return }
    flags &= ~fsImmutableFlag
    _ = ioctl(fd, fsIocSetFlags, &flags)
}
