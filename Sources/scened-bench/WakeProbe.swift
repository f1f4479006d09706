import Glibc
import Varlink

// The two processes `scened-bench wake` measures with, run as this same binary:
//   wake-probe FIFO   the app scened starts (ExecStart=): attaches as $SCENED_APP, and on each
//                     didReceiveNotification writes "<CLOCK_MONOTONIC s> <seq> <woken s>\n" to
//                     FIFO (woken: when its wait for the event ended), then
//                     acknowledges the event so that scened suspends (and freezes) it again;
//   wake-echo IN OUT  the kernel's floor: blocks reading IN; for each byte it reads it writes
//                     "<CLOCK_MONOTONIC s>\n" to OUT.
// Both stamp their own clock before anything else, so that the figure is "the handler runs",
// not "the bench noticed". They exit when the bench (or scened) goes away.

/// `wake-probe FIFO`: exits 0 when scened ends the attachment, 1 on anything unexpected.
func wakeProbe(fifo: String) -> Int32 {
    guard let probe = ProbeAttachment.start("wake-probe", fifo: fifo) else { return 1 }
    let (app, out, answers, stream) = (probe.app, probe.out, probe.answers, probe.stream)
    do {
        var scratch = [UInt8](repeating: 0, count: 1 << 16)
        // When the first wait since the app was suspended (or handled its last notification)
        // ended: the thaw's wake-up, even if `resumed` and the notification come in two reads.
        var woken: Double?
        while true {
            // Its own loop rather than VarlinkClient's, to stamp when the wait ended apart from
            // when the handler runs (the event parsed).
            var p = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, -1) < 0 && errno != EINTR { throw BenchError("poll: \(errnoText())") }
            let at = woken ?? now()
            woken = at
            var messages: [JSONObject] = []
            let open = stream.read(&scratch) { raw in
                if let object = (try? JSONParser.parse(raw))?.objectValue { messages.append(object) }
            }
            for message in messages {
                if let error = message["error"]?.stringValue { throw BenchError("Attach: \(error)") }
                if try probeHandle(message["parameters"]?["event"], app: app, woken: at, out: out, answers: answers) {
                    woken = nil
                }
            }
            if !open { return 0 }
        }
    } catch {
        probeLog("wake-probe (\(app)): \(error)")
        return 1
    }
}

/// One event of the probe's app: a notification is stamped ("<handler> <seq> <woken>\n" to
/// the FIFO) and acknowledged; bounded callbacks and tasks are answered so that scened
/// suspends it again. True for a notification and for `suspended`: the next wait is the
/// next wake's.
private func probeHandle(_ event: JSONValue?, app: String, woken: Double, out: Int32, answers: VarlinkClient) throws -> Bool {
    guard let event, let name = event["event"]?.stringValue, let seq = event["seq"]?.intValue else { return false }
    switch name {
    case "didReceiveNotification":
        let line = "\(now()) \(seq) \(woken)\n"
        guard line.withCString({ write(out, $0, strlen($0)) }) > 0 else {
            throw BenchError("the bench closed its FIFO: \(errnoText())")
        }
        _ = try answers.call("io.scened.App.Acknowledge", ["app": .string(app), "seq": .int(seq)])
        return true
    case "performBackgroundTask":
        if let identifier = event["identifier"]?.stringValue {
            _ = try answers.call("io.scened.App.CompleteBackgroundTask",
                                 ["app": .string(app), "identifier": .string(identifier), "success": true])
        }
    case "willTerminate", "didEnterBackground":
        _ = try answers.call("io.scened.App.Acknowledge", ["app": .string(app), "seq": .int(seq)])
    case "suspended":
        return true
    default:
        break
    }
    return false
}

/// `wake-echo IN OUT`: exits 0 at the end of IN, 1 on an error.
func wakeEcho(input: String, output: String) -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    let fdIn = open(input, O_RDONLY | O_CLOEXEC)
    let fdOut = open(output, O_WRONLY | O_CLOEXEC)
    guard fdIn >= 0, fdOut >= 0 else {
        probeLog("wake-echo: open \(input) or \(output): \(errnoText())")
        return 1
    }
    var byte: UInt8 = 0
    while true {
        let n = read(fdIn, &byte, 1)
        if n == 0 { return 0 }
        if n < 0 {
            if errno == EINTR { continue }
            return 1
        }
        let line = "\(now())\n"
        guard line.withCString({ write(fdOut, $0, strlen($0)) }) > 0 else { return 1 }
    }
}

/// Lines written into a FIFO by a probe, read without blocking.
final class LineReader {
    let fd: Int32
    private var pending: [UInt8] = []

    /// Opens `path` for reading without waiting for a writer.
    init(fifo path: String) throws {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw BenchError("open \(path): \(errnoText())") }
    }

    deinit { close(fd) }

    /// The next whole line, waiting up to `timeout` seconds; with the time of its read.
    func next(timeout: Double, _ what: String) throws -> (line: String, at: Double) {
        let deadline = now() + timeout
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                return (line, now())
            }
            let left = deadline - now()
            if left <= 0 { throw BenchError("nothing within \(timeout) s: \(what)") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(1000, left * 1000) + 1))
            var chunk = [UInt8](repeating: 0, count: 512)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { pending += chunk[0..<n] }
            // The writer gone: poll reports the hang-up at once, every time.
            if n == 0 { usleep(1_000) }
        }
    }
}

/// A FIFO at `path` (an existing one is replaced).
func makeFifo(_ path: String) throws {
    unlink(path)
    guard mkfifo(path, 0o600) == 0 else { throw BenchError("mkfifo \(path): \(errnoText())") }
}
