import Foundation

// scene-notes: an example app on SceneClient. It counts its activations and keeps the count
// and a note in its scene's restoration data, so that a reclaim disconnect or a kill -9 loses
// nothing. Every callback is printed as it comes.
//
//   scene-notes [--app ID] [--socket PATH]   attach to the running scened and stay
//   scene-notes --demo                       start a private scened and play the whole story

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, in arguments: [String]) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

if arguments.contains("--help") || arguments.contains("-h") {
    out("""
    usage: scene-notes [--app ID] [--socket PATH]
           scene-notes --demo
    Attaches to scened as the app (default org.example.notes) and prints its callbacks. The
    socket is --socket, $SCENED_SOCKET, or the one scenectl finds. --demo starts a private
    scened (built next to this program) and shows a restore after a disconnect and after kill -9.
    """)
    exit(0)
}
let app = option("--app", in: arguments) ?? "org.example.notes"
if arguments.contains("--demo") {
    exit(Demo(app: app).run())
}
exit(await runApp(app: app, socket: option("--socket", in: arguments)))
