import Glibc
import Varlink

// varlink-certification: the Varlink project's certification test, both sides.
//   --varlink=unix:PATH            serve org.varlink.certification at PATH until killed
//   --client --varlink=unix:PATH   certify the server at PATH; exit 0 when it passes

let usage = "usage: varlink-certification [--client] --varlink=unix:PATH"

var clientMode = false
var address: String?
for argument in CommandLine.arguments.dropFirst() {
    if argument == "--client" {
        clientMode = true
    } else if argument.hasPrefix("--varlink=") {
        address = String(argument.dropFirst("--varlink=".count))
    } else if argument == "--help" || argument == "-h" {
        writeLine(usage)
        exit(0)
    } else {
        printError("varlink-certification: unknown argument '\(argument)'\n\(usage)")
        exit(2)
    }
}
guard let address, address.hasPrefix("unix:"), address.count > 5 else {
    printError("varlink-certification: --varlink=unix:PATH is required (only unix addresses are supported)\n\(usage)")
    exit(2)
}
// A Varlink address may carry ";mode=…" after the path; only the path matters here.
let path = String(address.dropFirst(5).prefix { $0 != ";" })

if clientMode {
    do {
        let client = try VarlinkClient(path: path, timeout: .seconds(30))
        try CertificationClient(client: client).run()
        exit(0)
    } catch {
        printError("varlink-certification: certification failed: \(error)")
        exit(1)
    }
} else {
    signal(SIGPIPE, SIG_IGN)
    let fd: Int32
    do {
        fd = try UnixSocket.listen(path: path, mode: 0o600)
    } catch {
        printError("varlink-certification: \(error)")
        exit(1)
    }
    writeLine("Listening on \(address)")
    var server = CertificationServer(listening: fd)
    server.run()
}
