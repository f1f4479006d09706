/// scened's command line.
public struct DaemonOptions: Equatable {
    public var socketPath: String?
    public var stateDirectory: String?
    public var configFile: String?
    public var configRoot = ""
    public var checkConfig = false
    public var dumpConfig = false
    /// Start on a damaged write-ahead log from its intact part (see README, Damaged storage).
    public var recover = false
    public var help = false
    public var version = false

    public init() {}

    public static let usage = """
    scened — scene session daemon (UIKit scene life cycle, Varlink, systemd)

    Usage: scened [OPTIONS]

    Runs in the foreground until SIGTERM or SIGINT. Under systemd it takes its socket from
    socket activation and reports readiness with sd_notify; run by hand it binds its own socket.

    Options:
      --socket PATH        Listen on PATH (default: the socket-activated one, else
                           $RUNTIME_DIRECTORY/io.scened.Manager, $XDG_RUNTIME_DIR/scened/io.scened.Manager,
                           /run/scened/io.scened.Manager for root, /tmp/scened-UID/io.scened.Manager)
      --state-dir DIR      Keep the session database (scened.db) in DIR (default: $STATE_DIRECTORY,
                           $XDG_STATE_HOME/scened, ~/.local/state/scened)
      --config FILE        Read FILE (and FILE.d/*.conf) instead of searching /etc/scened,
                           /run/scened, /usr/local/lib/scened, /usr/lib/scened
      --config-root DIR    Prefix DIR to the configuration search paths
      --check-config       Check the configuration, print problems, exit (0: valid)
      --dump-config        Print the effective configuration and exit
      --recover            Start even though the database's write-ahead log is damaged: keep
                           what is intact, drop the damaged rest (copied aside first) and raise
                           every counter past it. Under systemd: touch DIR/recover, then restart
      -h, --help           Show this help
      --version            Show the version

    Exit status: 0 clean shutdown; 1 start-up or runtime failure; 2 usage error.
    See scened(8), scened.conf(5) and scened.app.conf(5).
    """

    public enum ParseError: Error, CustomStringConvertible {
        case unknownOption(String)
        case missingValue(String)
        case unexpectedArgument(String)

        public var description: String {
            switch self {
            case .unknownOption(let o): "unknown option \(o)"
            case .missingValue(let o): "option \(o) needs a value"
            case .unexpectedArgument(let a): "unexpected argument \(a)"
            }
        }
    }

    public static func parse(_ arguments: [String]) throws(ParseError) -> DaemonOptions {
        var options = DaemonOptions()
        var i = 0
        func value(_ name: String, inline: String?) throws(ParseError) -> String {
            if let inline { return inline }
            i += 1
            guard i < arguments.count else { throw .missingValue(name) }
            return arguments[i]
        }
        while i < arguments.count {
            let arg = arguments[i]
            var name = arg
            var inline: String?
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                name = String(arg[..<eq])
                inline = String(arg[arg.index(after: eq)...])
            }
            switch name {
            case "--socket": options.socketPath = try value(name, inline: inline)
            case "--state-dir": options.stateDirectory = try value(name, inline: inline)
            case "--config": options.configFile = try value(name, inline: inline)
            case "--config-root": options.configRoot = try value(name, inline: inline)
            case "--check-config": options.checkConfig = true
            case "--dump-config": options.dumpConfig = true
            case "--recover": options.recover = true
            case "-h", "--help": options.help = true
            case "--version": options.version = true
            default:
                if arg.hasPrefix("-") { throw .unknownOption(arg) }
                throw .unexpectedArgument(arg)
            }
            i += 1
        }
        return options
    }
}
