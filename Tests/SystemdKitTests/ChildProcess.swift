import Glibc
import SystemdKit

/// Runs a program with extra environment variables, its stdout and stderr captured in a file.
/// For tests that need a fresh process (socket activation) or another mount namespace
/// (a private journald).
struct ChildProcess {
    let pid: pid_t
    private let outputDirectory = TemporaryDirectory()

    init(_ arguments: [String], environment: [String: String] = [:], keepingFD keptFD: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let outputPath = outputDirectory.file("output")
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        if let keptFD { posix_spawn_file_actions_adddup2(&actions, keptFD, 3) }

        var environmentStrings: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            let name = text.prefix { $0 != "=" }
            if environment[String(name)] == nil { environmentStrings.append(text) }
            cursor += 1
        }
        environmentStrings += environment.map { "\($0.key)=\($0.value)" }

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environmentStrings.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard rc == 0 else { throw ChildError.spawnFailed(arguments[0], rc) }
        self.pid = pid
    }

    /// Waits up to `timeoutSeconds` for the exit; kills the child (by pid) on timeout.
    /// Returns the exit status (128+signal when killed) and the captured output.
    func wait(timeoutSeconds: UInt64) -> (status: Int32, output: String) {
        let deadline = Clock.monotonic.now() + timeoutSeconds * 1_000_000
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Clock.monotonic.now() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(10_000)
        }
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = readFile(outputDirectory.file("output")) ?? ""
        outputDirectory.remove()
        return (exitStatus, output)
    }
}

enum ChildError: Error {
    case spawnFailed(String, Int32)
}

func readFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        bytes += buffer[..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The arguments that run only the test `filter` (a regex on the test ID) of this very test
/// binary, with swift-testing (see the runner SwiftPM generates).
func thisTestBinary(filter: String) -> [String] {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return [path, "--testing-library", "swift-testing", "--filter", filter]
}

/// The role a re-executed test binary plays, from SYSTEMDKIT_CHILD_ROLE; nil in a normal run.
let childRole: String? = getenv("SYSTEMDKIT_CHILD_ROLE").map { String(cString: $0) }
