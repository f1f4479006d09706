import SceneCore
import ScenedTestSupport
import Varlink

/// A Monitor subscription (more=true) that collects events and checks every one of them with
/// ConformanceChecker (rules R1–R27) as it arrives.
final class EventMonitor {
    private let client: VarlinkClient
    private(set) var events: [ObservedEvent] = []
    private var checker: ConformanceChecker
    private(set) var violations: [ConformanceViolation] = []
    /// Events read but not yet consumed by `expect`.
    private var unconsumed: [ObservedEvent] = []

    /// - Parameters:
    ///   - parameters: Monitor's parameters (app, session, since).
    ///   - timing: the daemon's timings, for the checker's "never early" timing rules.
    ///   - consecutive: the stream is the daemon's whole, unfiltered output from a fresh start.
    init(_ daemon: DaemonProcess, parameters: JSONObject = [:], timing: EngineConfiguration? = nil,
         consecutive: Bool = true) throws {
        client = try VarlinkClient(path: daemon.socketPath, timeout: .milliseconds(100))
        checker = ConformanceChecker(options: .init(timing: timing, strict: true, consecutiveSequence: consecutive))
        try client.sendRaw(VarlinkCall(method: "io.scened.Manager.Monitor", parameters: parameters, more: true).encoded())
        // The first reply carries no event: it says the subscription is in place.
        guard let first = try receive(timeout: 10) else {
            throw TestFailure("Monitor did not confirm the subscription within 10 s; daemon stderr:\n\(daemon.stderr)")
        }
        guard first.parameters["event"] == nil, first.continues else {
            throw TestFailure("Monitor's first reply should be an event-less 'subscribed' reply with continues, got \(first)")
        }
    }

    /// Tells the checker what a session saved, so that its reconnection is held to R11.
    func noteSaved(_ data: RestorationData?, for session: String) {
        if let id = SessionID(parsing: session) { checker.noteRestorationSaved(data, for: id) }
    }

    private func receive(timeout: Double) throws -> VarlinkReply? {
        let deadline = Deadline(seconds: timeout)
        while true {
            do {
                let message = try client.receiveMessage()
                let reply = try VarlinkReply(from: message)
                if let error = reply.error { throw TestFailure("Monitor failed: \(error) \(reply.parameters)") }
                return reply
            } catch VarlinkClientError.timedOut {
                if deadline.hasPassed { return nil }
            }
        }
    }

    /// The next event, or nil if none arrives within `timeout`.
    func next(timeout: Double) throws -> ObservedEvent? {
        if !unconsumed.isEmpty { return unconsumed.removeFirst() }
        guard let reply = try receive(timeout: timeout) else { return nil }
        guard reply.continues else { throw TestFailure("the Monitor stream ended: \(reply)") }
        guard let object = reply.parameters["event"]?.objectValue else {
            throw TestFailure("Monitor reply without an event: \(reply.parameters)")
        }
        let observed = ObservedEvent(object: object)
        events.append(observed)
        violations += checker.check(try observed.lifecycleEvent())
        return observed
    }

    /// Reads exactly `steps.count` events and fails unless they are `steps`, in order.
    @discardableResult
    func expect(_ steps: [Step], _ context: String, timeout: Double = 10) throws -> [ObservedEvent] {
        var got: [ObservedEvent] = []
        let deadline = Deadline(seconds: timeout)
        while got.count < steps.count {
            guard let e = try next(timeout: max(Double(deadline.remainingMilliseconds) / 1000, 0.05)) else { break }
            got.append(e)
        }
        let observed = got.map(\.step)
        guard observed == steps else {
            throw TestFailure("""
                \(context): the Monitor stream differs from §2's sequence
                expected:
                \(steps.map { "  \($0)" }.joined(separator: "\n"))
                observed:
                \(got.map { "  \($0)" }.joined(separator: "\n"))
                """)
        }
        return got
    }

    /// Fails if any event arrives within `milliseconds`.
    func expectQuiet(_ context: String, milliseconds: Int = 300) throws {
        if let extra = try next(timeout: Double(milliseconds) / 1000) {
            throw TestFailure("\(context): unexpected event \(extra)")
        }
    }

    /// Fails if the checker found any rule violation so far.
    func assertConformant(_ context: String) throws {
        guard violations.isEmpty else {
            throw TestFailure("\(context): the Monitor stream breaks the lifecycle rules:\n"
                              + violations.map { "  \($0)" }.joined(separator: "\n"))
        }
    }

    func close() { client.close() }
}
