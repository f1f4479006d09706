import CSystemd
import Glibc

/// The service manager's side of the process (sd-daemon(3)): readiness and status
/// notifications, the watchdog interval and socket activation.
///
/// The `unsetEnvironment` variants call unsetenv(3), which is not thread-safe: use them at
/// start-up, before other threads exist.
public enum ServiceManager {
    /// Sends `state` ("READY=1\nSTATUS=…", newline-separated assignments) to `$NOTIFY_SOCKET`
    /// (sd_notify). Returns > 0 when sent, 0 when `NOTIFY_SOCKET` is unset (not run by systemd),
    /// and a negative errno on failure. Usually safe to ignore.
    @discardableResult
    public static func notify(_ state: String, unsetEnvironment: Bool = false) -> Int32 {
        sd_notify(unsetEnvironment ? 1 : 0, state)
    }

    /// Sends `state` together with `fds` (SCM_RIGHTS), e.g. "FDSTORE=1\nFDNAME=x" to park fds in
    /// the manager's fd store (sd_pid_notify_with_fds). Same return values as `notify`.
    @discardableResult
    public static func notify(_ state: String, fds: [Int32]) -> Int32 {
        fds.withUnsafeBufferPointer { buffer in
            sd_pid_notify_with_fds(0, 0, state, buffer.baseAddress, UInt32(buffer.count))
        }
    }

    /// The watchdog interval in µs when the manager expects `WATCHDOG=1` pings from this process
    /// (`WATCHDOG_USEC` set, `WATCHDOG_PID` unset or ours), else nil (sd_watchdog_enabled).
    /// Ping at least every half interval; `EventLoop.enableWatchdog()` does that for you.
    public static func watchdogInterval(unsetEnvironment: Bool = false) -> UInt64? {
        var usec: UInt64 = 0
        return sd_watchdog_enabled(unsetEnvironment ? 1 : 0, &usec) > 0 ? usec : nil
    }

    /// The sockets passed by socket activation (fds 3, 4, …), with their `FileDescriptorName=`
    /// (sd_listen_fds_with_names). Empty when not activated, when `LISTEN_PID` is another
    /// process, or on a malformed environment. The fds get FD_CLOEXEC.
    ///
    /// The name is nil where the manager gave none (libsystemd reports that as "unknown").
    /// By default the `LISTEN_*` variables are unset so that children don't inherit them.
    public static func listenFDs(unsetEnvironment: Bool = true) -> [ListenFD] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(unsetEnvironment ? 1 : 0, &names)
        // The array and each string are malloc'd for us, whatever happens below.
        defer {
            if let names {
                var cursor = names
                while let name = cursor.pointee {
                    free(name)
                    cursor += 1
                }
                free(names)
            }
        }
        guard count > 0 else { return [] }
        return (0..<Int(count)).map { index in
            let fd = SD_LISTEN_FDS_START + Int32(index)
            guard let name = names?[index] else { return ListenFD(fd: fd, name: nil) }
            let text = String(cString: name)
            return ListenFD(fd: fd, name: text == "unknown" ? nil : text)
        }
    }

    /// True when `fd` is a listening AF_UNIX SOCK_STREAM socket (sd_is_socket_unix), which is
    /// what a `ListenStream=/path` socket unit passes.
    public static func isUnixStreamListener(_ fd: Int32) -> Bool {
        sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0
    }

    /// True when the system was booted with systemd as PID 1 (sd_booted).
    public static func booted() -> Bool {
        sd_booted() > 0
    }
}

/// One socket-activation fd.
public struct ListenFD: Equatable, Hashable, Sendable {
    public var fd: Int32
    /// `FileDescriptorName=` (or `FDNAME=` from the fd store); nil when none was given.
    public var name: String?

    public init(fd: Int32, name: String?) {
        self.fd = fd
        self.name = name
    }
}
