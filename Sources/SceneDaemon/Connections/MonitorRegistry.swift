/// The connections whose stream is a Monitor fed by fan-out (not an attached app's stream,
/// which is fed by app): the ones each commit's events are offered to. Kept as streams change
/// (`ClientConnection.stream`), so publishing a batch costs the monitors, not every
/// connection: with many apps attached, walking all of them at every commit to find no
/// monitor is a cost each commit would pay for nothing.
final class MonitorRegistry {
    /// By connection number. A member leaves when its stream ends or changes, and a connection
    /// that closes drops its stream, so the registry never keeps a closed connection alive.
    private(set) var members: [Int: ClientConnection] = [:]

    var count: Int { members.count }

    func update(_ conn: ClientConnection, fanOut: Bool) {
        members[conn.number] = fanOut ? conn : nil
    }
}

extension ReplyStream {
    /// A Monitor fed by fan-out: every connection with one is in the `MonitorRegistry`.
    var isFanOutMonitor: Bool {
        if case .monitor(let m) = self { !m.attached } else { false }
    }
}
