import Glibc
import SystemdKit

/// The daemon's own messages about itself (not lifecycle events): stderr, with a syslog
/// priority prefix that journald turns into PRIORITY when stderr is a journal stream.
enum Diagnostics {
    static func info(_ message: String) { write(6, message) }
    static func notice(_ message: String) { write(5, message) }
    static func warning(_ message: String) { write(4, message) }
    static func error(_ message: String) { write(3, message) }

    static func fatal(_ message: String) -> Never {
        write(2, message)
        exit(1)
    }

    /// Under journald the `<N>` prefix sets the priority; on a terminal it would be noise.
    private static let underJournal = Journal.isConnectedToJournal()

    private static func write(_ priority: Int, _ message: String) {
        var line = underJournal ? "<\(priority)>\(message)\n" : "scened: \(message)\n"
        line.withUTF8 { buffer in _ = Glibc.write(2, buffer.baseAddress, buffer.count) }
    }
}
