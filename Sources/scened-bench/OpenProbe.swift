import Glibc
import Varlink

// The app `scened-bench open` measures with, run as this same binary:
//   open-probe FIFO   started by scened (ExecStart=): attaches as $SCENED_APP, and for each
//                     openURLContexts it reads writes "<CLOCK_MONOTONIC s> <seq> <url>\n" to
//                     FIFO, stamped once the event is parsed, before anything else.
// It answers the bounded callbacks an app answers, so that scened never waits on it.

/// `open-probe FIFO`: exits 0 when scened ends the attachment, 1 on anything unexpected.
func openProbe(fifo: String) -> Int32 {
    guard let probe = ProbeAttachment.start("open-probe", fifo: fifo) else { return 1 }
    let (app, out, answers, stream) = (probe.app, probe.out, probe.answers, probe.stream)
    do {
        var scratch = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            var p = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, -1) < 0 && errno != EINTR { throw BenchError("poll: \(errnoText())") }
            var messages: [JSONObject] = []
            let open = stream.read(&scratch) { raw in
                if let object = (try? JSONParser.parse(raw))?.objectValue { messages.append(object) }
            }
            for message in messages {
                if let error = message["error"]?.stringValue { throw BenchError("Attach: \(error)") }
                try openProbeHandle(message["parameters"]?["event"], app: app, out: out, answers: answers)
            }
            if !open { return 0 }
        }
    } catch {
        probeLog("open-probe (\(app)): \(error)")
        return 1
    }
}

/// One event: an openURLContexts is stamped and its first URL written to the FIFO; the bounded
/// callbacks are acknowledged.
private func openProbeHandle(_ event: JSONValue?, app: String, out: Int32, answers: VarlinkClient) throws {
    guard let event, let name = event["event"]?.stringValue, let seq = event["seq"]?.intValue else { return }
    switch name {
    case "openURLContexts":
        let at = now()
        let url = event["urlContexts"]?.arrayValue?.first?["url"]?.stringValue ?? "-"
        let line = "\(at) \(seq) \(url)\n"
        guard line.withCString({ write(out, $0, strlen($0)) }) > 0 else {
            throw BenchError("the bench closed its FIFO: \(errnoText())")
        }
    case "willTerminate", "didEnterBackground":
        _ = try answers.call("io.scened.App.Acknowledge", ["app": .string(app), "seq": .int(seq)])
    default:
        break
    }
}
