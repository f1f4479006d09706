import Locking
import Varlink

/// Monitor on a thread of its own, its events handed to the screen's loop through a queue.
final class MonitorFeed: Sendable {
    private struct State {
        var events: [JSONObject] = []
        var ended: String?
    }
    private let state = Locked(State())

    /// The connection is used by the feed's thread only from here on.
    static func start(_ connection: ManagerTransport, since: Int64) throws -> MonitorFeed {
        let feed = MonitorFeed()
        let handOver = UncheckedBox(connection)
        try startThread {
            let connection = handOver.value
            do {
                do {
                    try feed.follow(connection, ["since": .int(since)])
                } catch let error as VarlinkError where error.name == ErrorReport.interface + ".EventsUnavailable" {
                    try feed.follow(connection, [:])
                }
                feed.state.withLock { $0.ended = "the event stream ended" }
            } catch {
                feed.state.withLock { $0.ended = "event stream: \(error)" }
            }
        }
        return feed
    }

    private func follow(_ connection: ManagerTransport, _ parameters: JSONObject) throws {
        try connection.callMore(ErrorReport.interface + ".Monitor", parameters) { reply in
            if let event = reply.object("event") { state.withLock { $0.events.append(event) } }
            return true
        }
    }

    /// The events since the last call, and why the stream ended if it did.
    func take() -> (events: [JSONObject], ended: String?) {
        state.withLock { state in
            defer { state.events.removeAll(keepingCapacity: true) }
            return (state.events, state.ended)
        }
    }
}
