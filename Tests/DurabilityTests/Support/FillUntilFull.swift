import Glibc
import ScenedTestSupport

/// Writes zeros to `path` until the file system is full (ENOSPC); returns the bytes written.
func fillUntilFull(_ path: String) throws -> Int {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw TestFailure("cannot create \(path): \(errnoText())") }
    defer { close(fd) }
    let chunk = [UInt8](repeating: 0x5a, count: 4096)
    var total = 0
    while true {
        let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        if n > 0 { total += n; continue }
        let code = errno
        if n < 0 && code == EINTR { continue }
        if n < 0 && code == ENOSPC { break }
        throw TestFailure("filling \(path): \(errnoText(code))")
    }
    // Byte-sized writes take the last partial block.
    var one: UInt8 = 0x5a
    while write(fd, &one, 1) == 1 { total += 1 }
    return total
}
