/// Which socket to talk to, in the order the daemon's clients agree on: `--socket`, then
/// `$SCENED_SOCKET`, then the caller's own daemon (`$XDG_RUNTIME_DIR`), the system's, and the
/// per-user fallback a non-root daemon binds when it has no runtime directory.
struct SocketLocation: Equatable {
    static let socketName = "io.scened.Manager"

    /// The path to connect to.
    var path: String
    /// Every candidate looked at when none was named; empty when one was.
    var candidates: [String]

    static func resolve(explicit: String?, context: Context) -> SocketLocation {
        if let explicit { return SocketLocation(path: explicit, candidates: []) }
        if let named = context.environment("SCENED_SOCKET") { return SocketLocation(path: named, candidates: []) }
        var candidates: [String] = []
        if let runtime = context.environment("XDG_RUNTIME_DIR") { candidates.append("\(runtime)/scened/\(socketName)") }
        candidates.append("/run/scened/\(socketName)")
        if context.uid != 0 { candidates.append("/tmp/scened-\(context.uid)/\(socketName)") }
        // None there: connect to the first anyway, so the error names the caller's default.
        let path = candidates.first(where: context.exists) ?? candidates[0]
        return SocketLocation(path: path, candidates: candidates)
    }

    /// Whether no candidate existed (the connection error then lists them all).
    func noneExisted(_ context: Context) -> Bool {
        !candidates.isEmpty && !candidates.contains(where: context.exists)
    }
}
