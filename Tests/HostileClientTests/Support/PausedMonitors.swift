import ScenedTestSupport
import Varlink

/// What a paused monitor received once it read: each event's sequence number and app, in the
/// order they came, and what was wrong with the stream, if anything.
struct MonitorLog: Sendable {
    struct Event: Sendable, Equatable {
        var seq: Int64
        var app: String
    }
    var events: [Event] = []
    var problem: String?
}

extension BackgroundLoad {
    /// Monitors (one per entry of `apps`: nil watches every app, else that app only) on sockets
    /// with a 4 KiB receive buffer, that read nothing until `resume` is set, then read as fast
    /// as they can until stopped, and drain for up to `drainSeconds` after. `logs` gets what
    /// each received when they stop, `counts` how many events each has so far while they run;
    /// a stream that ends, errs or is not made of events is a problem.
    static func pausedMonitors(socket: String, apps: [String?], resume: Shared<Bool>, logs: Shared<[MonitorLog]>,
                               counts: Shared<[Int]>, drainSeconds: Double = 5, seconds: Double = 60) -> BackgroundLoad {
        BackgroundLoad { control in
            let deadline = Deadline(seconds: seconds)
            do {
                let monitors = try apps.map { app in
                    let raw = try RawConnection(path: socket, receiveBuffer: 4096, connectTimeout: 3)
                    try raw.sendCall(manager + "Monitor", app.map { ["app": .string($0)] } ?? [:], more: true)
                    return raw
                }
                var collected = Array(repeating: MonitorLog(), count: apps.count)
                var subscribed = Array(repeating: false, count: apps.count)
                func collect() {
                    for (index, monitor) in monitors.enumerated() where collected[index].problem == nil {
                        while let bytes = monitor.bufferedMessage() {
                            guard let message = parseObject(bytes) else {
                                collected[index].problem = "a message that is not a JSON object"
                                break
                            }
                            if !subscribed[index] {
                                subscribed[index] = true
                                if message.errorName != nil { collected[index].problem = "Monitor refused: \(describe(message))" }
                                continue
                            }
                            guard let event = message.parametersObject["event"]?.objectValue, let seq = event["seq"]?.intValue,
                                  let app = event["app"]?.stringValue, message.errorName == nil else {
                                collected[index].problem = "after \(collected[index].events.count) events: \(describe(message))"
                                break
                            }
                            collected[index].events.append(MonitorLog.Event(seq: seq, app: app))
                        }
                    }
                    let now = collected.map(\.events.count)
                    if now != counts.value { counts.update { $0 = now } }
                }
                control.started.update { $0 = true }
                while !resume.value && !control.shouldStop && !deadline.hasPassed { sleepMilliseconds(10) }
                while !control.shouldStop && !deadline.hasPassed {
                    for monitor in monitors { try monitor.fill(waitingMilliseconds: 0) }
                    collect()
                    sleepMilliseconds(1)
                }
                let drain = Deadline(seconds: drainSeconds)
                var quietSince = Deadline(seconds: 0.3)
                while !drain.hasPassed && !quietSince.hasPassed {
                    let before = monitors.map(\.receivedBytes)
                    for monitor in monitors { try monitor.fill(waitingMilliseconds: 5) }
                    if monitors.map(\.receivedBytes) != before { quietSince = Deadline(seconds: 0.3) }
                }
                collect()
                for (index, monitor) in monitors.enumerated() where monitor.sawEOF && collected[index].problem == nil {
                    collected[index].problem = "closed by the daemon after \(collected[index].events.count) events"
                }
                let done = collected
                logs.update { $0 = done }
                control.report.update { $0.replies = done.reduce(0) { $0 + $1.events.count } }
            } catch {
                control.fail("paused monitors: \(error)")
            }
        }
    }
}
