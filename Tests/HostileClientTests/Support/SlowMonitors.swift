import ScenedTestSupport
import Varlink

/// What a monitor that was cut off received must be: whole messages (the subscription, then
/// events with consecutive sequence numbers: the dropped ones are the newest), then
/// LimitExceeded for `limit`. Nil when it is so.
func cutStreamProblem(_ messages: [[UInt8]], limit: String, maximum: Int64) -> String? {
    guard messages.count >= 2 else { return "only \(messages.count) messages" }
    var previous: Int64?
    for (index, bytes) in messages.dropLast().enumerated() {
        guard let message = parseObject(bytes) else {
            return "message \(index) is not a whole JSON object: \(String(decoding: bytes.prefix(80), as: UTF8.self))…"
        }
        if index == 0 { continue }
        guard let seq = message.parametersObject["event"]?["seq"]?.intValue else {
            return "message \(index) of \(messages.count) is not an event: \(describe(message))"
        }
        if let previous, seq != previous + 1 { return "event \(seq) follows \(previous): events in between were lost" }
        previous = seq
    }
    return limitExceededProblem(parseObject(messages.last!), limit: limit, maximum: maximum).map { "the last message: \($0)" }
}

extension BackgroundLoad {
    /// `count` Monitors that read, but slowly: `bytesPerTick` from each every 50 ms, far less
    /// than a busy daemon sends. Once stopped they read fast until the daemon closes them (at
    /// most `drainSeconds`), and each stream is checked with `cutStreamProblem`: the report's
    /// failure lists what is wrong.
    static func slowMonitors(socket: String, count: Int, bytesPerTick: Int = 4096, limit: String, maximum: Int64,
                             drainSeconds: Double = 8, seconds: Double = 40) -> BackgroundLoad {
        BackgroundLoad { control in
            let deadline = Deadline(seconds: seconds)
            do {
                let monitors = try (0..<count).map { _ in
                    let raw = try RawConnection(path: socket, receiveBuffer: 4096, connectTimeout: 3)
                    try raw.sendCall(manager + "Monitor", more: true)
                    return raw
                }
                var messages = Array(repeating: [[UInt8]](), count: count)
                func collect() {
                    for (index, monitor) in monitors.enumerated() {
                        while let message = monitor.bufferedMessage() { messages[index].append(message) }
                    }
                }
                control.started.update { $0 = true }
                while !control.shouldStop && !deadline.hasPassed {
                    for monitor in monitors { try monitor.fill(waitingMilliseconds: 0, maxBytes: bytesPerTick) }
                    collect()
                    sleepMilliseconds(50)
                }
                let drain = Deadline(seconds: drainSeconds)
                var open = monitors.count
                while open > 0 && !drain.hasPassed {
                    open = 0
                    for monitor in monitors {
                        if try monitor.fill(waitingMilliseconds: 0) { open += 1 }
                    }
                    collect()
                    if open > 0 { sleepMilliseconds(5) }
                }
                var problems: [String] = []
                for index in monitors.indices {
                    if let problem = cutStreamProblem(messages[index], limit: limit, maximum: maximum) {
                        problems.append("slow monitor \(index) (\(messages[index].count) messages): \(problem)")
                    } else if !monitors[index].sawEOF {
                        problems.append("slow monitor \(index): still open \(drainSeconds) s after its LimitExceeded")
                    }
                }
                control.report.update { $0.replies = messages.reduce(0) { $0 + $1.count } }
                if !problems.isEmpty { control.fail(problems.prefix(3).joined(separator: "; ")) }
            } catch {
                control.fail("slow monitors: \(error)")
            }
        }
    }
}
