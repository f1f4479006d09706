import ScenedTestSupport
import Varlink

/// A process attached as an app over io.scened.App.Attach: its own stream of events on one
/// connection, its answers and requests on another (a connection serves one streaming call).
final class AttachedApp {
    let app: String
    let stream: RawConnection
    let requests: VarlinkClient
    /// The first reply's `attached` object.
    let attached: JSONObject

    init(_ daemon: DaemonProcess, app: String, since: UInt64? = nil) throws {
        self.app = app
        stream = try RawConnection(path: daemon.socketPath)
        requests = try daemon.client(timeout: .seconds(20))
        var parameters: JSONObject = ["app": .string(app)]
        if let since { parameters["since"] = .int(Int64(since)) }
        try stream.sendCall("io.scened.App.Attach", parameters, more: true)
        let first = try stream.receiveObject(timeout: 10)
        guard first.errorName == nil, let attached = first.parametersObject["attached"]?.objectValue else {
            throw TestFailure("Attach \(app) failed: \(first)")
        }
        self.attached = attached
    }

    /// The next event, nil if none arrives in time; an error reply is thrown with its name.
    func next(timeout: Double = 10) throws -> ObservedEvent? {
        guard let reply = try nextReply(timeout: timeout) else { return nil }
        if let name = reply.errorName { throw TestFailure("Attach \(app) ended with \(name): \(reply.parametersObject)") }
        guard let event = reply.parametersObject["event"]?.objectValue else {
            throw TestFailure("an attach reply without an event: \(reply)")
        }
        return ObservedEvent(object: event)
    }

    /// The next reply whatever it is, nil if none arrives within `timeout`.
    func nextReply(timeout: Double) throws -> JSONObject? {
        let deadline = Deadline(seconds: timeout)
        while true {
            if let bytes = stream.bufferedMessage() {
                guard case .object(let object) = try JSONParser.parse(bytes) else { throw TestFailure("not an object") }
                return object
            }
            if stream.sawEOF || deadline.hasPassed { return nil }
            try stream.fill(waitingMilliseconds: min(deadline.remainingMilliseconds, 50))
        }
    }

    /// Events until (and with) the first one named `name`.
    func events(through name: String, timeout: Double = 10) throws -> [ObservedEvent] {
        var out: [ObservedEvent] = []
        while true {
            guard let e = try next(timeout: timeout) else {
                throw TestFailure("\(app) got no \(name) within \(timeout) s; got \(out)")
            }
            out.append(e)
            if e.event == name { return out }
        }
    }

    @discardableResult
    func call(_ method: String, _ parameters: JSONObject = [:]) throws -> JSONObject {
        var p = parameters
        p["app"] = .string(app)
        return try requests.call("io.scened.App." + method, p)
    }
}
