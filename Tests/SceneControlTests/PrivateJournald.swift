import Glibc
import ScenedTestSupport

/// A journald of our own, in private mount and PID namespaces, whose socket and journal files
/// live in a temporary directory of the host: entries sent to `socketPath` end up in journal
/// files under `journalDirectory`, which `--journal-directory` reads. The host's /run and
/// journal are never touched; killing `unshare` (--kill-child) ends the namespace and journald.
final class PrivateJournald {
    static let journald = "/lib/systemd/systemd-journald"
    static let unshare = "/usr/bin/unshare"
    static let available = getuid() == 0 && access(journald, X_OK) == 0 && access(unshare, X_OK) == 0
        && access("/var/log/journal", F_OK) == 0

    /// Inside the namespace: fresh /run, our directories bound where journald puts its sockets
    /// and its volatile journal, the host's persistent journal hidden, a private journald.conf.
    static let script = """
        set -eu
        D="$1"
        mount -t tmpfs -o mode=0755 tmpfs /run
        mkdir -p /run/systemd/journal /run/log/journal
        mount --bind "$D/sock" /run/systemd/journal
        mount --bind "$D/journal" /run/log/journal
        mount -t tmpfs -o mode=2755 tmpfs /var/log/journal
        printf '[Journal]\\nStorage=volatile\\nReadKMsg=no\\nForwardToSyslog=no\\nForwardToWall=no\\nForwardToConsole=no\\n' > /run/journald.conf
        mount --bind /run/journald.conf /etc/systemd/journald.conf
        SYSTEMD_LOG_TARGET=console \(journald) &
        wait
        """

    let directory = TemporaryDirectory()
    var socketPath: String { directory.path + "/sock/socket" }
    var journalDirectory: String { directory.path + "/journal" }
    private let child: ChildProcess

    init() throws {
        mkdir(directory.path + "/sock", 0o755)
        mkdir(directory.path + "/journal", 0o755)
        child = try ChildProcess([Self.unshare, "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
                                  "--mount-proc", "/bin/sh", "-c", Self.script, "sh", directory.path],
                                 directory: directory.path, label: "journald")
        guard waitUntil(seconds: 10, { access(socketPath, F_OK) == 0 }) else {
            stop()
            throw TestFailure("journald did not start: \(child.stderr)")
        }
    }

    func stop() {
        child.killNow()
        directory.remove()
    }

    /// Sends one entry in journald's native protocol; values with newlines use the binary form.
    func send(_ fields: [(String, String)]) throws {
        var datagram: [UInt8] = []
        for (name, value) in fields {
            datagram += Array(name.utf8)
            if value.contains("\n") {
                datagram.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(value.utf8.count).littleEndian) { datagram += $0 }
                datagram += Array(value.utf8)
            } else {
                datagram.append(UInt8(ascii: "="))
                datagram += Array(value.utf8)
            }
            datagram.append(UInt8(ascii: "\n"))
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        let sent = withUnixAddress(socketPath) { sendto(fd, datagram, datagram.count, 0, $0, $1) }
        guard sent == datagram.count else { throw TestFailure("send to journald failed: \(errnoText())") }
    }

    /// An entry as scened logs it, with a fixed SYSLOG_PID so lines read "scened[1234]: ...".
    func log(_ message: String, session: String? = nil, app: String? = nil, events: [String] = [],
             identifier: String = "scened") throws {
        var fields = [("MESSAGE", message), ("SYSLOG_IDENTIFIER", identifier), ("SYSLOG_PID", "1234")]
        if let session { fields.append(("SCENED_SESSION", session)) }
        if let app { fields.append(("SCENED_APP", app)) }
        for event in events { fields.append(("SCENED_EVENT", event)) }
        try send(fields)
    }
}
