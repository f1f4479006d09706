import Foundation

// scene-notes: an example app on SceneClient. It counts its activations and keeps the count
// and a note in its scene's restoration data, so that a reclaim disconnect or a kill -9 loses
// nothing. Every callback is printed as it comes.
//
//   scene-notes [--app ID] [--socket PATH] [--hold-mib N] [--refresh-sec N]
//                                            attach to the running scened and stay
//   scene-notes --demo                       start a private scened and play the whole story

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, in arguments: [String]) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}
func environment(_ name: String) -> String? {
    guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
    return value
}

if arguments.contains("--help") || arguments.contains("-h") {
    out("""
    usage: scene-notes [--app ID] [--socket PATH] [--hold-mib N] [--refresh-sec N]
           scene-notes --demo
    Attaches to scened as the app and prints its callbacks. The app is --app, $SCENED_APP, or
    org.example.notes; the socket is --socket, $SCENED_SOCKET, or the one scenectl finds
    (scened sets both variables when it starts the app itself). --hold-mib N makes each
    connected scene allocate N MiB and touch every page, so that it is resident, until the
    scene disconnects. It registers the background task notes.refresh and asks for it every
    --refresh-sec seconds (default 900): each run counts in the connected scenes' saved state.
    A notification's "text" becomes the scenes' note. --demo starts a private scened (built next to this program) and shows a
    restore after a disconnect and after kill -9.
    """)
    exit(0)
}
let app = option("--app", in: arguments) ?? environment("SCENED_APP") ?? "org.example.notes"
if arguments.contains("--demo") {
    exit(Demo(app: app).run())
}
var holdMiB = 0
if let text = option("--hold-mib", in: arguments) {
    // Bounded so that a typo cannot ask for more than the address space can give.
    guard let n = Int(text), n >= 0, n <= 1 << 20 else {
        FileHandle.standardError.write(Data("scene-notes: --hold-mib needs a number of MiB (0 to 1048576), not \(text)\n".utf8))
        exit(2)
    }
    holdMiB = n
}
var refreshInterval: TimeInterval = 900
if let text = option("--refresh-sec", in: arguments) {
    guard let n = Double(text), n >= 0, n <= 86_400 * 365 else {
        FileHandle.standardError.write(Data("scene-notes: --refresh-sec needs a number of seconds (0 to a year), not \(text)\n".utf8))
        exit(2)
    }
    refreshInterval = n
}
exit(await runApp(app: app, socket: option("--socket", in: arguments) ?? environment("SCENED_SOCKET"), holdMiB: holdMiB,
                  refreshInterval: refreshInterval))
