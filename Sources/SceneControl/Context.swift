import Glibc
import SystemdKit
import Varlink

/// Everything a command touches outside itself, so that tests can replace it: output, the
/// environment, the connection to the daemon, the clock and the time zone.
public struct Context {
    public var out: TextOutput
    public var err: TextOutput
    /// Environment variables (`SCENED_SOCKET`, `XDG_RUNTIME_DIR`).
    public var environment: (String) -> String?
    public var uid: uid_t
    /// Whether a socket (or anything) exists at a path; socket resolution takes the first that does.
    public var exists: (String) -> Bool
    /// Opens a connection to the daemon's socket; `timeout` is nil for streams.
    public var connect: (_ path: String, _ timeout: Duration?) throws -> ManagerTransport
    /// Wall-clock time, µs since the epoch (for "5min ago").
    public var now: () -> UInt64
    /// Times in UTC instead of the local time zone (tests).
    public var utc: Bool
    /// Polled by `logs -f` between waits; the binary stops on SIGINT/SIGTERM instead.
    public var shouldStop: () -> Bool
    /// The binary exits 0 on SIGINT/SIGTERM while streaming; tests keep their own handlers.
    public var exitOnInterrupt: Bool
    /// Whether stdout is a terminal: it decides the pager and what -j prints.
    public var stdoutIsTerminal: Bool
    /// Environment variables as set, an empty value included (SCENECTL_PAGER= turns the pager off).
    public var variable: (String) -> String?
    /// Whether an executable file exists at a path (the pager fallbacks less and more).
    public var executable: (String) -> Bool
    /// Starts a pager and points stdout at it; nil when none could be started.
    public var startPager: (PagerChoice) -> PagerProcess?

    public init(out: TextOutput, err: TextOutput,
                environment: @escaping (String) -> String? = { _ in nil },
                uid: uid_t = getuid(),
                exists: @escaping (String) -> Bool = { access($0, F_OK) == 0 },
                connect: @escaping (_ path: String, _ timeout: Duration?) throws -> ManagerTransport,
                now: @escaping () -> UInt64 = { Clock.realtime.now() },
                utc: Bool = false,
                shouldStop: @escaping () -> Bool = { false },
                exitOnInterrupt: Bool = false,
                stdoutIsTerminal: Bool = false,
                variable: ((String) -> String?)? = nil,
                executable: @escaping (String) -> Bool = { access($0, X_OK) == 0 },
                startPager: @escaping (PagerChoice) -> PagerProcess? = { _ in nil }) {
        self.out = out
        self.err = err
        self.environment = environment
        self.uid = uid
        self.exists = exists
        self.connect = connect
        self.now = now
        self.utc = utc
        self.shouldStop = shouldStop
        self.exitOnInterrupt = exitOnInterrupt
        self.stdoutIsTerminal = stdoutIsTerminal
        self.variable = variable ?? environment
        self.executable = executable
        self.startPager = startPager
    }

    /// The real thing: stdout, stderr, the process environment, a Unix socket.
    public static func standard() -> Context {
        Context(
            out: FileDescriptorOutput(fd: 1), err: FileDescriptorOutput(fd: 2),
            environment: { name in
                guard let value = getenv(name) else { return nil }
                let text = String(cString: value)
                return text.isEmpty ? nil : text
            },
            connect: { path, timeout in
                let client = try VarlinkClient(path: path, timeout: timeout)
                try TrustedServer.check(client, path: path)
                return client
            },
            exitOnInterrupt: true,
            stdoutIsTerminal: isatty(1) == 1,
            variable: { name in getenv(name).map { String(cString: $0) } },
            startPager: PagerProcess.start)
    }
}
