import Foundation

// scene-notes: an example app on SceneClient. It counts its activations and keeps the count
// and a note in its scene's restoration data, so that a reclaim disconnect or a kill -9 loses
// nothing. Every callback is printed as it comes. It opens notes: URLs (config/apps.d):
// notes:new?text=TEXT makes a new note in a new scene, notes:open?id=SESSION shows that note
// in its scene (each scene's activation conditions take only its own note's URLs).
//
//   scene-notes [--app ID] [--socket PATH] [--hold-mib N] [--refresh-sec N] [--notification-delay-sec N]
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
                       [--notification-delay-sec N]
           scene-notes --demo
    Attaches to scened as the app and prints its callbacks. The app is --app, $SCENED_APP, or
    org.example.notes; the socket is --socket, $SCENED_SOCKET, or the one scenectl finds
    (scened sets both variables when it starts the app itself). --hold-mib N makes each
    connected scene allocate N MiB and touch every page, so that it is resident, until the
    scene disconnects. It registers the background task notes.refresh; with --refresh-sec N
    it asks for one N seconds after its launch and after each run. Each run counts in the
    connected scenes' saved state. A notification's "text" becomes the scenes' note, saved;
    --notification-delay-sec N makes handling one take N seconds (longer than its budget, the
    app is frozen again before it answers). --demo starts a private scened (built next to
    this program) and shows a restore after a disconnect and after kill -9.
    With [App] URLSchemes=notes in its apps.d file (config/apps.d/org.example.notes.conf),
    scenectl open 'notes:new?text=hi' makes a note in a new scene and
    scenectl open 'notes:open?id=s1' shows the note of s1 in its scene.
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
/// A number of seconds from 0 to a year, or exit 2 naming the option.
func seconds(_ name: String) -> TimeInterval? {
    guard let text = option(name, in: arguments) else { return nil }
    guard let n = Double(text), n >= 0, n <= 86_400 * 365 else {
        FileHandle.standardError.write(Data("scene-notes: \(name) needs a number of seconds (0 to a year), not \(text)\n".utf8))
        exit(2)
    }
    return n
}
let delegate = NotesAppDelegate(refreshInterval: seconds("--refresh-sec"),
                                notificationDelay: seconds("--notification-delay-sec") ?? 0)
exit(await runApp(app: app, socket: option("--socket", in: arguments) ?? environment("SCENED_SOCKET"), holdMiB: holdMiB,
                  delegate: delegate))
