import ScenedTestSupport
import Varlink

/// The well-behaved client the tests protect: one call in flight at a time, Activate then
/// Background on a session of its own, every reply checked.
final class Bystander {
    private let connection: RawConnection
    let session: String
    private var activateNext = true

    /// Calls completed within a period.
    struct Throughput: CustomStringConvertible {
        var calls: Int
        var seconds: Double
        /// A call was still unanswered `grace` seconds after the period ended.
        var stalled: Bool
        var perSecond: Double { Double(calls) / seconds }
        var description: String {
            "\(calls) calls in \(Int(seconds * 1000)) ms (\(Int(perSecond.rounded()))/s)\(stalled ? ", then a call went unanswered" : "")"
        }
    }

    init(_ daemon: DaemonProcess, app: String = "org.example.bystander") throws {
        connection = try RawConnection(path: daemon.socketPath)
        try connection.sendCall(manager + "Connect", ["app": .string(app), "background": true])
        let reply = try connection.receiveObject(timeout: 10)
        guard reply.errorName == nil, let id = reply.parametersObject["session"]?["id"]?.stringValue else {
            throw TestFailure("the bystander could not connect its session: \(reply)")
        }
        session = id
    }

    private func send() throws -> String {
        let method = activateNext ? "Activate" : "Background"
        try connection.sendCall(manager + method, ["session": .string(session)])
        return method
    }

    private func check(_ reply: JSONObject, _ method: String) throws {
        guard reply.errorName == nil else { throw TestFailure("the bystander's \(method) failed: \(reply)") }
        let wanted = activateNext ? "foregroundActive" : "background"
        guard reply.parametersObject["session"]?["state"]?.stringValue == wanted else {
            throw TestFailure("the bystander's \(method) answered a session not in \(wanted): \(reply)")
        }
        activateNext.toggle()
    }

    /// `count` calls, which must all be answered within `seconds` in total.
    func calls(_ count: Int, within seconds: Double, _ context: String) throws {
        let deadline = Deadline(seconds: seconds)
        for done in 0..<count {
            let method = try send()
            do {
                let remaining = Double(deadline.remainingMilliseconds) / 1000
                try check(try connection.receiveObject(timeout: max(remaining, 0.001)), method)
            } catch {
                throw TestFailure("\(context): the bystander completed only \(done) of \(count) calls within \(seconds) s: \(error)")
            }
        }
    }

    /// Calls completed in `seconds`; a call unanswered at the end is waited for up to `grace`
    /// seconds more (not counted), so that the connection stays in step for the next period.
    func throughput(over seconds: Double, grace: Double = 5) throws -> Throughput {
        let end = monotonicSeconds() + seconds
        var calls = 0
        while monotonicSeconds() < end {
            let method = try send()
            let wait = max(end - monotonicSeconds(), 0) + grace
            let received: [UInt8]?
            do {
                received = try connection.receiveMessage(timeout: wait)
            } catch {
                return Throughput(calls: calls, seconds: seconds, stalled: true)
            }
            guard let bytes = received else { throw TestFailure("the daemon closed the bystander's connection") }
            guard case .object(let reply) = try JSONParser.parse(bytes) else { throw TestFailure("bystander: reply is not an object") }
            try check(reply, method)
            if monotonicSeconds() <= end { calls += 1 }
        }
        return Throughput(calls: calls, seconds: seconds, stalled: false)
    }
}
