import SceneCore

/// The freedesktop registration of the apps' URL schemes, as text: one `.desktop` file per app
/// that has schemes (x-scheme-handler/SCHEME, running `scenectl open -- %u`), and the
/// `mimeinfo.cache` that xdg-mime's generic lookup and GIO read to find them. Pure: the writer
/// (`DesktopDirectory`) puts the files in place and removes those of schemes that went.
public enum DesktopEntries {
    /// A URL scheme and the app that handles it (ListRoutes' routes of kind "scheme").
    public struct Route: Sendable, Equatable {
        public var scheme: String
        public var app: String

        public init(scheme: String, app: String) {
            self.scheme = scheme
            self.app = app
        }
    }

    /// What to write: file name → text (the entries and mimeinfo.cache), and why any route
    /// was left out (each a line for stderr).
    public struct Output: Sendable, Equatable {
        public var files: [String: String]
        public var refused: [String]
    }

    /// The entries scened writes all have this prefix: only such files are ever removed.
    public static let prefix = "scened-"
    public static let cacheName = "mimeinfo.cache"

    /// `exec`: the scenectl that entries run; `socket`: the daemon they open in (the one the
    /// routes came from), so that a user's own instance does not take the system's URLs.
    public static func generate(_ routes: [Route], exec: String, socket: String) throws(ControlError) -> Output {
        // Exec= is split on spaces by xdg-open's generic lookup without honouring the
        // specification's quotes: a path needing quotes cannot be used safely.
        for (what, path) in [("scenectl's path", exec), ("the socket path", socket)] where !isPlainPath(path) {
            throw ControlError(.failure, "\(what) '\(path)' is not an absolute path of letters, digits and / . _ + - (what a desktop entry's Exec= carries unquoted)")
        }
        var schemes: [String: [String]] = [:], refused: [String] = []
        for route in routes {
            if let reason = refusal(route) {
                refused.append(reason)
                continue
            }
            schemes[route.app, default: []].append(route.scheme.lowercased())
        }
        var files: [String: String] = [:], cache: [(String, String)] = []
        for (app, list) in schemes {
            let sorted = Array(Set(list)).sorted()
            files[fileName(app)] = entry(app: app, schemes: sorted, exec: exec, socket: socket)
            cache += sorted.map { ("x-scheme-handler/" + $0, fileName(app)) }
        }
        files[cacheName] = mimeCache(cache)
        return Output(files: files, refused: refused)
    }

    public static func fileName(_ app: String) -> String { prefix + app + ".desktop" }

    /// Why a route cannot be written, or nil. Schemes are RFC 3986's (letters, digits, + - .),
    /// app ids reverse-DNS: anything else could end a key, start a new line or reach a shell.
    static func refusal(_ route: Route) -> String? {
        if route.scheme.contains(":") || URLContext.scheme(of: route.scheme + ":") == nil {
            return "not writing a desktop entry for the scheme '\(escaped(route.scheme))' of \(escaped(route.app)): not an RFC 3986 scheme"
        }
        if !AppID.isValid(route.app) {
            return "not writing a desktop entry for the app '\(escaped(route.app))' (scheme \(route.scheme)): not an app id"
        }
        return nil
    }

    /// "--" before the URL: whatever a launcher passes, scenectl takes it as the URL.
    static func entry(app: String, schemes: [String], exec: String, socket: String) -> String {
        """
        [Desktop Entry]
        Type=Application
        Version=1.4
        Name=\(app) (scened)
        Comment=Opens \(schemes.map { $0 + ":" }.joined(separator: " ")) URLs in \(app) through scened
        Exec=\(exec) --socket \(socket) open -- %u
        NoDisplay=true
        Terminal=false
        MimeType=\(schemes.map { "x-scheme-handler/\($0);" }.joined())
        X-Scened-App=\(app)

        """
    }

    /// update-desktop-database's format: each type with the entries that handle it.
    static func mimeCache(_ pairs: [(type: String, file: String)]) -> String {
        var byType: [String: [String]] = [:]
        for pair in pairs { byType[pair.type, default: []].append(pair.file) }
        var text = "[MIME Cache]\n"
        for type in byType.keys.sorted() { text += type + "=" + byType[type]!.sorted().map { $0 + ";" }.joined() + "\n" }
        return text
    }

    /// Absolute (the desktop's launcher has its own PATH and directory), and nothing to quote.
    static func isPlainPath(_ path: String) -> Bool {
        path.hasPrefix("/") && path.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || ((b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A) || b == 0x2F || b == 0x2E || b == 0x5F || b == 0x2B || b == 0x2D
        }
    }

    /// A name as the daemon sent it, with control characters visible (it goes to a terminal).
    static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\x" + String(scalar.value, radix: 16, uppercase: false).leftPadded(2)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
