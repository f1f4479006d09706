import Glibc

/// The fields of /proc/PID/stat that ProcessKit needs. The command (field 2) is in
/// parentheses and may itself hold spaces and parentheses: fields are counted after the
/// last ')'.
public struct ProcessStat: Sendable, Equatable {
    public let pid: pid_t
    public let command: String
    /// R, S, D, T (stopped), t (traced), Z (zombie), …
    public let state: Character
    public let parentPID: pid_t
    public let processGroup: pid_t
    public let session: pid_t
    /// utime and stime, in clock ticks (sysconf(_SC_CLK_TCK) a second).
    public let userTicks: UInt64
    public let systemTicks: UInt64

    /// nil when the process does not exist (or vanished while being read).
    public init?(pid: pid_t) {
        guard case .success(let text) = SystemFiles.read("/proc/\(pid)/stat") else { return nil }
        self.init(pid: pid, statLine: text)
    }

    /// Parses a /proc/PID/stat line.
    public init?(pid: pid_t, statLine text: String) {
        guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") , open < close else { return nil }
        let rest = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // rest[0] is field 3 (state): field n is rest[n - 3].
        guard rest.count >= 13, let state = rest[0].first,
              let parent = pid_t(rest[1]), let group = pid_t(rest[2]), let session = pid_t(rest[3]),
              let user = UInt64(rest[11]), let system = UInt64(rest[12]) else { return nil }
        self.pid = pid
        command = String(text[text.index(after: open)..<close])
        self.state = state
        parentPID = parent
        processGroup = group
        self.session = session
        userTicks = user
        systemTicks = system
    }
}
