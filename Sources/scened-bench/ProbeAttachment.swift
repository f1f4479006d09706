import Glibc
import Varlink

/// What a probe scened starts (`wake-probe`, `open-probe`) does first: its app and scened's
/// socket from the environment scened gives it, the bench's FIFO open for writing, a
/// connection for answers and the Attach stream sent.
struct ProbeAttachment {
    let app: String
    let out: Int32
    let answers: VarlinkClient
    let stream: FramedConnection

    /// nil once the reason is logged under `name`.
    static func start(_ name: String, fifo: String) -> ProbeAttachment? {
        signal(SIGPIPE, SIG_IGN)
        guard let app = getenv("SCENED_APP").map({ String(cString: $0) }),
              let socket = getenv("SCENED_SOCKET").map({ String(cString: $0) }) else {
            probeLog("\(name): SCENED_APP and SCENED_SOCKET must be set (run by scened as ExecStart=)")
            return nil
        }
        let out = open(fifo, O_WRONLY | O_CLOEXEC)
        guard out >= 0 else {
            probeLog("\(name): open \(fifo): \(errnoText())")
            return nil
        }
        do {
            // Attach holds its connection: answers go on a second one.
            let answers = try VarlinkClient(path: socket, timeout: .seconds(30))
            let stream = try FramedConnection(socket: socket)
            stream.queue(VarlinkCall(method: "io.scened.App.Attach", parameters: ["app": .string(app)], more: true).encoded())
            guard stream.flush() else { throw BenchError("scened closed the Attach connection") }
            return ProbeAttachment(app: app, out: out, answers: answers, stream: stream)
        } catch {
            probeLog("\(name) (\(app)): \(error)")
            return nil
        }
    }
}

/// To stderr: scened keeps it as the probe's log.
func probeLog(_ text: String) {
    let line = text + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}
