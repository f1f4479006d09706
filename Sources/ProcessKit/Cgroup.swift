import CProcessShim
import Glibc

/// A cgroup v2 directory: what the daemon puts one app's processes in, to freeze, kill and
/// measure them together (whatever they fork stays inside).
public struct Cgroup: Sendable, Hashable {
    /// Absolute directory, e.g. /sys/fs/cgroup/unified/scened/app.example.
    public let path: String

    public init(path: String) {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.path = path
    }

    /// A file of the cgroup: "cgroup.procs" → "<path>/cgroup.procs".
    public func file(_ name: String) -> String { path + "/" + name }

    /// A child cgroup's (not necessarily existing) directory.
    public func child(_ name: String) -> Cgroup { Cgroup(path: file(name)) }

    // MARK: Where

    /// The cgroup2 mount point: /sys/fs/cgroup on a pure v2 system, /sys/fs/cgroup/unified on a
    /// hybrid one; nil without cgroup v2.
    public static func hierarchy() -> String? {
        guard case .success(let text) = SystemFiles.read("/proc/self/mountinfo") else { return nil }
        return hierarchy(mountinfo: text)
    }

    /// The first cgroup2 mount point in a mountinfo text.
    static func hierarchy(mountinfo text: String) -> String? {
        for line in text.split(separator: "\n") {
            // "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw": the
            // filesystem type follows the " - " separator, the mount point is field 5.
            let fields = line.split(separator: " ")
            guard let separator = fields.firstIndex(of: "-"), separator >= 5, separator + 1 < fields.count else { continue }
            if fields[separator + 1] == "cgroup2" { return unescapeMountPath(fields[4]) }
        }
        return nil
    }

    /// This process's cgroup v2 directory (the "0::" line of /proc/self/cgroup under the
    /// hierarchy); nil without cgroup v2.
    public static func own() -> String? {
        guard let root = hierarchy(), case .success(let text) = SystemFiles.read("/proc/self/cgroup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            let relative = line.dropFirst(3)
            return relative == "/" ? root : root + relative
        }
        return nil
    }

    /// Creates the directory and missing parents (mkdir -p); an existing one is fine.
    @discardableResult
    public static func create(_ path: String) throws(ProcessKitError) -> Cgroup {
        let cgroup = Cgroup(path: path)
        var prefix = ""
        for component in cgroup.path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw ProcessKitError("mkdir", prefix, code: errno)
            }
        }
        return cgroup
    }

    /// Whether this process can create child cgroups here and move processes into them (the
    /// root, or a subtree delegated to us): tried with a probe directory, removed at once.
    public var isWritable: Bool {
        // A v1 hierarchy or a plain directory is no cgroup v2.
        guard ps_is_cgroup2(path) == 1 else { return false }
        guard access(file("cgroup.procs"), W_OK) == 0 else { return false }
        let probe = file(".processkit-probe-\(getpid())")
        guard mkdir(probe, 0o755) == 0 else { return false }
        rmdir(probe)
        return true
    }

    // MARK: Freezing, killing

    /// Writes 1 to cgroup.freeze. The freeze is complete when `events().frozen` (cgroup.events
    /// changes, so it can be watched with EPOLLPRI).
    public func freeze() throws(ProcessKitError) { try SystemFiles.write(file("cgroup.freeze"), "1") }

    public func thaw() throws(ProcessKitError) { try SystemFiles.write(file("cgroup.freeze"), "0") }

    /// cgroup.events: populated (processes in it or below) and frozen (freeze complete).
    public func events() throws(ProcessKitError) -> (populated: Bool, frozen: Bool) {
        let text = try SystemFiles.read(file("cgroup.events")).get()
        var populated = false, frozen = false
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 2 else { continue }
            if fields[0] == "populated" { populated = fields[1] == "1" }
            if fields[0] == "frozen" { frozen = fields[1] == "1" }
        }
        return (populated, frozen)
    }

    /// SIGKILL to every process in it and below, at once (cgroup.kill, Linux 5.14).
    public func kill() throws(ProcessKitError) {
        let killFile = file("cgroup.kill")
        guard SystemFiles.exists(killFile) else {
            let reason = SystemFiles.exists(path) ? "no cgroup.kill (a cgroup v2 directory on Linux 5.14 or later is needed)" : nil
            throw ProcessKitError("kill", path, code: ENOENT, explanation: reason)
        }
        try SystemFiles.write(killFile, "1")
    }

    /// Moves a process (with all its threads) into this cgroup.
    public func add(_ pid: pid_t) throws(ProcessKitError) {
        try SystemFiles.write(file("cgroup.procs"), "\(pid)\n")
    }

    // MARK: Reading

    /// The processes directly in this cgroup (cgroup.procs; children cgroups' not included).
    public func pids() throws(ProcessKitError) -> [pid_t] {
        let text = try SystemFiles.read(file("cgroup.procs")).get()
        return text.split(separator: "\n").compactMap { pid_t($0) }
    }

    /// memory.current in bytes; nil where the memory controller is not enabled for this cgroup.
    public func memoryCurrent() -> UInt64? {
        guard case .success(let text) = SystemFiles.read(file("memory.current")) else { return nil }
        return UInt64(text.trimmingSuffix("\n"))
    }

    /// Removes the (empty) cgroup directory.
    public func remove() throws(ProcessKitError) {
        guard rmdir(path) == 0 else {
            let code = errno
            let reason = code == EBUSY ? "still populated or has child cgroups (Device or resource busy)" : nil
            throw ProcessKitError("rmdir", path, code: code, explanation: reason)
        }
    }
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
private func unescapeMountPath(_ field: Substring) -> String {
    var bytes: [UInt8] = []
    let utf8 = Array(field.utf8)
    var i = 0
    while i < utf8.count {
        if utf8[i] == UInt8(ascii: "\\"), i + 4 <= utf8.count,
           let value = UInt8(String(decoding: utf8[(i + 1)..<(i + 4)], as: UTF8.self), radix: 8) {
            bytes.append(value)
            i += 4
        } else {
            bytes.append(utf8[i])
            i += 1
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

extension StringProtocol {
    func trimmingSuffix(_ suffix: String) -> SubSequence {
        hasSuffix(suffix) ? self[..<index(endIndex, offsetBy: -suffix.count)] : self[...]
    }
}
