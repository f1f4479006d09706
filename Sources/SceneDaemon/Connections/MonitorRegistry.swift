/// The connections whose stream is a Monitor fed by fan-out (not an attached app's stream,
/// which is fed by app): the ones each commit's events are offered to. The server keeps it in
/// line with the streams after every step (`VarlinkServer.afterStep`), so publishing a batch
/// costs the monitors, not every connection: with many apps attached, walking all of them at
/// every commit to find no monitor is a cost each commit would pay for nothing.
struct MonitorRegistry {
    /// By connection number. A member leaves when its stream ends or changes, and a connection
    /// that closes drops its stream, so the registry never keeps a closed connection alive.
    private(set) var members: [Int: ClientConnection] = [:]

    var count: Int { members.count }

    /// Brings the membership in line with the connection's stream. Only a change of membership
    /// touches the dictionary: a monitor's stream is rewritten at every publish, possibly while
    /// the registry is being walked.
    @inline(__always)
    mutating func sync(_ conn: ClientConnection) {
        let fanOut = conn.stream?.isFanOutMonitor ?? false
        guard fanOut != conn.isFanOutMonitor else { return }
        conn.isFanOutMonitor = fanOut
        members[conn.number] = fanOut ? conn : nil
    }
}

extension ReplyStream {
    /// A Monitor fed by fan-out: every connection with one is in the `MonitorRegistry`.
    var isFanOutMonitor: Bool {
        if case .monitor(let m) = self { !m.attached } else { false }
    }
}
