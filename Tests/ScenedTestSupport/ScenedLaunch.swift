import Glibc
import Varlink

/// Starting the real scened for a test: the common part of the daemon harnesses.
public enum ScenedLaunch {
    /// What a service manager would pass, and the client's socket variable: none of it may leak
    /// from the test runner's environment into a daemon under test.
    public static let scrubbedVariables = [
        "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
        "STATE_DIRECTORY", "SCENED_SOCKET",
    ]

    /// Starts `arguments` (scened, possibly behind a wrapper such as nsenter) with the test
    /// runner's environment minus `scrubbedVariables`, then `environment` on top. With
    /// `notifyPath`, a NotifyListener is bound there and named in NOTIFY_SOCKET (else
    /// NOTIFY_SOCKET is removed). Does not wait for anything.
    public static func spawn(_ arguments: [String], notifyPath: String?, environment: [String: String?] = [:],
                             directory: String, label: String) throws -> (child: ChildProcess, notify: NotifyListener?) {
        let notify = try notifyPath.map { try NotifyListener(path: $0) }
        var env: [String: String?] = ["NOTIFY_SOCKET": notifyPath]
        for name in scrubbedVariables { env[name] = .some(nil) }
        for (name, value) in environment { env[name] = value }
        do {
            return (try ChildProcess(arguments, environment: env, directory: directory, label: label), notify)
        } catch {
            notify?.close()
            throw error
        }
    }

    /// Waits until scened is ready: READY=1 on `notify` or, without one, an answer to
    /// org.varlink.service.GetInfo on `socketPath`. Throws if it exits first, or if it is not
    /// ready within `timeout` seconds (it is killed then).
    public static func waitReady(_ child: ChildProcess, notify: NotifyListener?, socketPath: String,
                                 timeout: Double) throws {
        let deadline = Deadline(seconds: timeout)
        while !deadline.hasPassed {
            if let notify {
                if notify.wait(for: "READY=1", seconds: 0.02) != nil { return }
            } else {
                if let client = try? VarlinkClient(path: socketPath, timeout: .seconds(5)),
                   (try? client.call("org.varlink.service.GetInfo")) != nil {
                    return
                }
                sleepMilliseconds(10)
            }
            if !child.isRunning {
                throw TestFailure("scened exited during start-up (\(child.outcome)); stderr:\n\(child.stderr)")
            }
        }
        child.killNow()
        throw TestFailure("scened did not become ready within \(timeout) s; stderr:\n\(child.stderr)")
    }

    /// Sends `signo` and waits for the clean shutdown, exit status 0; throws otherwise (and kills
    /// scened if it still runs after `timeout` seconds).
    public static func stop(_ child: ChildProcess, signal signo: Int32 = SIGTERM, timeout: Double) throws {
        child.signal(signo)
        guard child.wait(seconds: timeout) else {
            child.killNow()
            throw TestFailure("scened did not exit within \(timeout) s of signal \(signo); stderr:\n\(child.stderr)")
        }
        guard child.exitStatus == 0 else {
            throw TestFailure("scened ended with \(child.outcome) after signal \(signo), expected exit 0; stderr:\n\(child.stderr)")
        }
    }
}

extension ScenedLaunch {
    /// ASAN_OPTIONS for a daemon whose memory a test bounds: under AddressSanitizer
    /// (`Fuzz/sanitize address`) freed memory waits in a quarantine of 256 MiB that RSS
    /// counts; without one, what RSS shows is what the daemon holds. Ignored by other builds.
    public static var measuredMemoryEnvironment: [String: String?] {
        let inherited = getenv("ASAN_OPTIONS").map { String(cString: $0) + ":" } ?? ""
        return ["ASAN_OPTIONS": inherited + "quarantine_size_mb=0"]
    }
}

/// What a memory bound measured in the test process itself must allow for when it runs under
/// AddressSanitizer: freed memory waits in ASan's quarantine (256 MiB by default) and counts in
/// RSS. Zero in other builds (the ASan runtime is then absent).
public enum AddressSanitizerAllowance {
    public static let kiB: Int = dlsym(nil, "__asan_init") != nil ? 256 * 1024 : 0
}
