import Glibc
import Testing

/// A failure of the harness itself (not of the code under test), with context.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The repository, found from this file's path (Tests/SceneDaemonTests/Support.swift).
let repositoryRoot: String = {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/")
}()

func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

/// Reads a whole file as UTF-8.
func readText(_ path: String) throws -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw HarnessError("open \(path): \(errnoText())") }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            throw HarnessError("read \(path): \(errnoText())")
        }
        if n == 0 { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Writes (replaces) a file in one write(2), so that a poller never sees half of it.
func writeText(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw HarnessError("open \(path) for writing: \(errnoText())") }
    defer { close(fd) }
    var copy = text
    let n = copy.withUTF8 { write(fd, $0.baseAddress, $0.count) }
    guard n == text.utf8.count else { throw HarnessError("write \(path): \(errnoText())") }
}

/// A private directory under /tmp, removed (recursively) by `remove()`.
final class TempDir {
    let path: String

    init(_ label: String = "scened-dtests") throws {
        var template = Array("/tmp/\(label).XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw HarnessError("mkdtemp: \(errnoText())")
        }
        path = String(cString: made)
    }

    /// `relative` may contain directories; they are created.
    @discardableResult
    func write(_ relative: String, _ text: String) throws -> String {
        let full = path + "/" + relative
        try makeDirectories(String(full[..<full.lastIndex(of: "/")!]))
        try writeText(full, text)
        return full
    }

    func makeDirectories(_ dir: String) throws {
        var current = ""
        for part in dir.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o755) != 0 && errno != EEXIST { throw HarnessError("mkdir \(current): \(errnoText())") }
        }
    }

    func symlink(_ target: String, at relative: String) throws {
        let full = path + "/" + relative
        try makeDirectories(String(full[..<full.lastIndex(of: "/")!]))
        guard Glibc.symlink(target, full) == 0 else { throw HarnessError("symlink \(full): \(errnoText())") }
    }

    func remove() { Self.removeTree(path) }

    private static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            if let d = opendir(path) {
                var names: [String] = []
                while let entry = readdir(d) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                    }
                    if name != "." && name != ".." { names.append(name) }
                }
                closedir(d)
                for name in names { removeTree(path + "/" + name) }
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}

/// The result of running a program to completion.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `path` with `arguments`, its output collected in files (no pipes to drain), and waits
/// at most `timeoutSeconds` before killing it.
func runProgram(_ path: String, _ arguments: [String], timeoutSeconds: Int = 20) throws -> ProcessResult {
    let dir = try TempDir("scened-dtests-run")
    defer { dir.remove() }
    let outPath = dir.path + "/stdout"
    let errPath = dir.path + "/stderr"
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    var pid: pid_t = 0
    let r = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard r == 0 else { throw HarnessError("posix_spawn \(path): \(errnoText(r))") }
    var status: Int32 = 0
    let deadline = time(nil) + time_t(timeoutSeconds)
    while true {
        let w = waitpid(pid, &status, WNOHANG)
        if w == pid { break }
        if w < 0 && errno != EINTR { throw HarnessError("waitpid: \(errnoText())") }
        if time(nil) > deadline {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            throw HarnessError("\(path) \(arguments) did not exit within \(timeoutSeconds) s")
        }
        usleep(5_000)
    }
    // WIFEXITED / WEXITSTATUS by hand (the macros are not imported).
    let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return ProcessResult(status: exitStatus, stdout: try readText(outPath), stderr: try readText(errPath))
}

/// The scened executable `swift test` built next to the test runner.
func scenedExecutable() throws -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard length > 0 else { throw HarnessError("readlink /proc/self/exe: \(errnoText())") }
    let exe = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var dir = String(exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)])
    while !dir.isEmpty {
        if access(dir + "/scened", X_OK) == 0 { return dir + "/scened" }
        guard let slash = dir.lastIndex(of: "/") else { break }
        dir = String(dir[..<slash])
    }
    throw HarnessError("no scened executable next to \(exe): run the suite with `swift test`, which builds it")
}
