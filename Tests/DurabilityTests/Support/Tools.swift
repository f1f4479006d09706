import Glibc

/// A failure of the system under test, or of the harness, with enough context to act on.
struct TestFailure: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// The programs the tests run: scened from the build directory (next to the test runner,
/// since `swift test` builds every executable of the package into it) and system tools.
enum Tools {
    static let buildDirectory: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        precondition(length > 0, "readlink /proc/self/exe failed")
        let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var dir = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        while !dir.isEmpty, access(dir + "/scened", X_OK) != 0, let slash = dir.lastIndex(of: "/") {
            dir = String(dir[..<slash])
        }
        return dir
    }()

    static var scened: String { buildDirectory + "/scened" }

    /// Fails with a clear message when scened is missing (the build did not produce it).
    static func requireScened() throws {
        guard access(scened, X_OK) == 0 else {
            throw TestFailure("\(scened) is missing: run the suite with `swift test` (it builds every executable) or `swift build` first")
        }
    }

    /// A system tool by name: the first executable in /usr/bin, /bin, /usr/sbin, /sbin, then $PATH.
    /// python3 prefers the system one (a pyenv shim costs a shell start per call).
    static func find(_ name: String) -> String? {
        var dirs = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        if let path = getenv("PATH") { dirs += String(cString: path).split(separator: ":").map(String.init) }
        for dir in dirs where access(dir + "/" + name, X_OK) == 0 { return dir + "/" + name }
        return nil
    }

    static func require(_ name: String, for purpose: String) throws -> String {
        guard let path = find(name) else {
            throw TestFailure("\(name) is not installed, but \(purpose) needs it")
        }
        return path
    }
}
