import Glibc
import Varlink

// The freedesktop registration: scenectl writes, from the daemon's routes, the desktop entries
// through which xdg-open and GIO reach scened (scened-desktop-entries.service runs it).

extension Verb {
    /// The system instance's directory; /etc/profile.d/scened-desktop.sh and the user
    /// environment generator put its parent in XDG_DATA_DIRS.
    public static let systemDesktopDirectory = "/var/lib/scened-desktop/applications"

    static let desktopEntries = Verb(
        "desktop-entries", section: .routing, synopsis: "[--directory DIR] [--exec PATH]",
        summary: "Write the desktop entries that send the apps' URL schemes to scened",
        details: "One NoDisplay .desktop file per app with URL schemes (MimeType=x-scheme-handler/SCHEME, Exec=scenectl --socket SOCKET open -- %u) and a mimeinfo.cache naming them, from the routes of the daemon asked; entries of apps whose schemes went are removed. Only scened-*.desktop and a mimeinfo.cache written by scenectl are touched. A route whose scheme or app id could break the file is left out with a message, and the status is 1. scened-desktop-entries.service runs it when scened starts or reloads.",
        options: [
            OptionSpec("directory", value: "DIR", "Write into DIR (default: \(systemDesktopDirectory) for root, else $XDG_DATA_HOME/scened-desktop/applications)"),
            OptionSpec("exec", value: "PATH", "The scenectl the entries run (default: this one)"),
        ],
        run: { invocation in
            let directory = invocation.options.value("directory") ?? defaultDesktopDirectory(invocation.context)
            let exec = try invocation.options.value("exec") ?? ownExecutable()
            let reply = try invocation.call("ListRoutes")
            let routes = reply.objects("routes").compactMap { route -> DesktopEntries.Route? in
                guard route.text("kind") == "scheme", let scheme = route.text("name"), let app = route.text("app") else { return nil }
                return DesktopEntries.Route(scheme: scheme, app: app)
            }
            let output = try DesktopEntries.generate(routes, exec: exec, socket: absolute(invocation.socket.path))
            let result = try DesktopDirectory.write(output.files, into: directory)
            try reportDesktopEntries(invocation, directory: directory, result: result, refused: output.refused)
        })

    static func reportDesktopEntries(_ invocation: Invocation, directory: String, result: DesktopDirectory.Result,
                                     refused: [String]) throws {
        let entries = result.written.filter { $0 != DesktopEntries.cacheName }
        if invocation.global.json {
            try invocation.json(["directory": .string(directory), "entries": .array(entries.map { .string($0) }),
                                 "removed": .array(result.removed.map { .string($0) }), "refused": .array(refused.map { .string($0) })])
        } else if !invocation.global.quiet {
            try invocation.line("\(directory): \(entries.count) entr\(entries.count == 1 ? "y" : "ies")"
                + (result.removed.isEmpty ? "" : ", removed \(result.removed.joined(separator: " "))"))
        }
        guard refused.isEmpty else {
            for line in refused.dropLast() { try invocation.context.err.write("scenectl: \(line)\n") }
            throw CommandExit(ExitStatus.failure.rawValue, message: refused.last)
        }
    }

    static func defaultDesktopDirectory(_ context: Context) -> String {
        if context.uid == 0 { return systemDesktopDirectory }
        let data = context.environment("XDG_DATA_HOME") ?? (context.environment("HOME") ?? "/nonexistent") + "/.local/share"
        return data + "/scened-desktop/applications"
    }

    /// This binary's path (the desktop's launcher runs it with PATH unknown).
    static func ownExecutable() throws(ControlError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { throw ControlError(.failure, "cannot tell scenectl's own path (/proc/self/exe); give --exec") }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
    }
}
