import Glibc

/// Where things live when nothing says otherwise: systemd's directories when it provides them,
/// the XDG directories of whoever runs the daemon by hand, so that no root is needed.
enum DaemonPaths {
    static let socketName = "io.scened.Manager"
    static let databaseName = "scened.db"

    static func environment(_ name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }

    /// The socket to bind when not socket-activated and not told.
    static func defaultSocket() -> String {
        if let dir = environment("RUNTIME_DIRECTORY")?.split(separator: ":").first { return "\(dir)/\(socketName)" }
        if let dir = environment("XDG_RUNTIME_DIR") { return "\(dir)/scened/\(socketName)" }
        if getuid() == 0 { return "/run/scened/\(socketName)" }
        // No runtime directory: a private one in /tmp, which SafeDirectory refuses if another
        // user made it first.
        return "/tmp/scened-\(getuid())/\(socketName)"
    }

    /// Candidates a client tries, in order, when not told: the caller's own daemon first, then
    /// the system's.
    static func clientSocketCandidates() -> [String] {
        var out: [String] = []
        if let explicit = environment("SCENED_SOCKET") { return [explicit] }
        if let dir = environment("XDG_RUNTIME_DIR") { out.append("\(dir)/scened/\(socketName)") }
        out.append("/run/scened/\(socketName)")
        if getuid() != 0 { out.append("/tmp/scened-\(getuid())/\(socketName)") }
        return out
    }

    static func defaultStateDirectory() -> String {
        if let dir = environment("STATE_DIRECTORY")?.split(separator: ":").first { return String(dir) }
        if let dir = environment("XDG_STATE_HOME") { return "\(dir)/scened" }
        if let home = environment("HOME") { return "\(home)/.local/state/scened" }
        return "/var/lib/scened"
    }
}
