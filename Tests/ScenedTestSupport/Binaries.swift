import Glibc

/// The programs the tests run. The package's executables are next to the test runner, since
/// `swift test` builds every executable of the package into the same directory.
public enum Binaries {
    /// The test runner itself (/proc/self/exe): <build>/debug/scenedPackageTests.xctest, or the
    /// swift-testing runner in the same directory.
    public static let testRunner: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        precondition(length > 0, "readlink /proc/self/exe failed")
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// The build directory: the runner's, or the nearest one above it that holds scened (a
    /// test bundle may be a directory, Contents/..., on some layouts).
    public static let directory: String = {
        let path = testRunner
        var dir = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        while !dir.isEmpty, access(dir + "/scened", X_OK) != 0, let slash = dir.lastIndex(of: "/") {
            dir = String(dir[..<slash])
        }
        return dir
    }()

    public static var scened: String { directory + "/scened" }
    public static var scenectl: String { directory + "/scenectl" }
    /// SystemdKitTests' helper (Tests/SystemdKitProbe), the child side of its process-level tests.
    public static var systemdkitProbe: String { directory + "/systemdkit-probe" }

    /// `path`, or a clear failure when the binary is missing (the build did not produce it).
    @discardableResult
    public static func require(_ path: String) throws -> String {
        guard access(path, X_OK) == 0 else {
            throw TestFailure("\(path) is missing: run the suite with `swift test` (it builds every executable) or `swift build` first")
        }
        return path
    }
}

/// System tools, by name.
public enum SystemTools {
    /// The first executable `name` in /usr/bin, /bin, /usr/sbin, /sbin, then $PATH (so python3
    /// is the system one rather than a pyenv shim, which costs a shell start per call).
    public static func find(_ name: String) -> String? {
        var dirs = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        if let path = getenv("PATH") { dirs += String(cString: path).split(separator: ":").map(String.init) }
        for dir in dirs where access(dir + "/" + name, X_OK) == 0 { return dir + "/" + name }
        return nil
    }

    /// `find(name)`, or a failure saying what needs it.
    public static func require(_ name: String, for purpose: String) throws -> String {
        guard let path = find(name) else {
            throw TestFailure("\(name) is not installed, but \(purpose) needs it")
        }
        return path
    }
}
