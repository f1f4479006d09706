import Glibc
import ScenedTestSupport

/// journald's native socket as scened sees it, without a journald: a datagram socket in the
/// workspace, bind-mounted over /run/systemd/journal/socket in a mount namespace of scened's
/// own, with scened's stderr named in JOURNAL_STREAM so that it logs structured entries
/// (sd_journal_sendv) instead of lines. Each datagram is one entry, "FIELD=value" a line.
final class JournalCapture {
    let listener: NotifyListener
    let path: String

    init(_ workspace: Workspace) throws {
        guard geteuid() == 0 else { throw TestFailure("capturing scened's journal entries needs root (a mount namespace)") }
        _ = try Binaries.require("/usr/bin/unshare")
        path = workspace.directory.file("journal.socket")
        listener = try NotifyListener(path: path)
    }

    deinit { listener.close() }

    /// DaemonProcess's wrapper: execs scened (the pid stays scened's) in the namespace.
    var wrapper: [String] {
        let script = """
            set -e
            mount -t tmpfs -o mode=0755 tmpfs /run/systemd
            mkdir -p /run/systemd/journal
            : > /run/systemd/journal/socket
            mount --bind "$0" /run/systemd/journal/socket
            JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2)
            export JOURNAL_STREAM
            exec "$@"
            """
        return ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, path]
    }

    /// The entries received so far with MESSAGE_ID=`id`.
    func entries(messageID id: String) -> [String] {
        listener.messages.filter { message in
            NotifyListener.lines(message).contains { NotifyListener.matches($0, "MESSAGE_ID=\(id)") }
        }
    }

    /// An entry's MESSAGE.
    static func message(_ entry: String) -> String {
        NotifyListener.lines(entry).first { $0.hasPrefix("MESSAGE=") }.map { String($0.dropFirst(8)) } ?? ""
    }
}
