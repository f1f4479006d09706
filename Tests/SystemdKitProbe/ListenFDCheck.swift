import Glibc
import ScenedTestSupport
import SystemdKit

/// The socket-activation check, meant to run as the program systemd-socket-activate starts for
/// ListenFDTests: it reports the listen fds it was given over the connection that activated it
/// ("3:varlink:listener,4:admin:listener env=unset"), which the test compares.
struct ListenFDCheck {
    func reportListenFDs(_ check: Check) throws {
        let fds = ServiceManager.listenFDs()
        let environment = getenv("LISTEN_FDS") == nil && getenv("LISTEN_PID") == nil ? "unset" : "set"
        let report = fds.map { fd in
            "\(fd.fd):\(fd.name ?? "-"):\(ServiceManager.isUnixStreamListener(fd.fd) ? "listener" : "other")"
        }.joined(separator: ",") + " env=\(environment)"
        writeAll(2, "systemdkit-probe: listen fds: \(report)\n")
        let first = try check.require(fds.first, "a listen fd")
        // Answer on the connection that activated us.
        let connection = accept(first.fd, nil, nil)
        let acceptError = errno
        try check.require(connection >= 0, "accept on fd \(first.fd) to succeed (\(errnoText(acceptError)))")
        writeAll(connection, report)
        close(connection)
    }
}
