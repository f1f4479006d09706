import CProcessShim

/// How a process ended.
public enum ExitStatus: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case killed(signal: Int32, coreDumped: Bool)

    /// "exited with status 1", "killed by signal 9 (SIGKILL)", "… (core dumped)".
    public var description: String {
        switch self {
        case .exited(let code):
            return "exited with status \(code)"
        case .killed(let signal, let coreDumped):
            let name = ps_signal_abbreviation(signal).map { " (SIG" + String(cString: $0) + ")" } ?? ""
            return "killed by signal \(signal)\(name)" + (coreDumped ? " (core dumped)" : "")
        }
    }
}
