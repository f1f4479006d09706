/// Per session: the usage sessions it appeared in and its last activation, in an array indexed
/// by the session number (numbers are dense and never reused), so that the victim pass reads
/// it without hashing. 16 bytes per session number ever allocated; a discarded session's slot
/// is zeroed, and trailing zeros are trimmed. Numbers far past the array (the store raises its
/// counters past a damaged log's losses or a damaged row's id) go to a dictionary instead of
/// growing the array by the whole gap.
struct UsageTable: Sendable {
    private var sessions: [Float] = []
    private var lastActivation: [Int64] = []
    private var far: [UInt64: (sessions: Float, lastActivation: Int64)] = [:]
    /// The most slots a new number may add to the arrays at once (16 MB).
    static let maxGrowth = 1 << 20

    func sessions(_ id: SessionID) -> Double? {
        guard id.rawValue < UInt64(sessions.count) else {
            return far[id.rawValue].map { Double($0.sessions) }
        }
        let i = Int(id.rawValue)
        guard sessions[i] > 0 else { return nil }
        return Double(sessions[i])
    }

    mutating func noteActivation(_ id: SessionID, now: Timestamp, gap: TimeSpan) {
        if id.rawValue >= UInt64(sessions.count) + UInt64(Self.maxGrowth) || (!far.isEmpty && far[id.rawValue] != nil) {
            var entry = far[id.rawValue] ?? (0, 0)
            if entry.sessions == 0 || now.microseconds - entry.lastActivation >= gap.microseconds { entry.sessions += 1 }
            entry.lastActivation = now.microseconds
            far[id.rawValue] = entry
            return
        }
        let i = Int(id.rawValue)
        if i >= sessions.count {
            sessions.append(contentsOf: repeatElement(0, count: i + 1 - sessions.count))
            lastActivation.append(contentsOf: repeatElement(0, count: i + 1 - lastActivation.count))
            // Numbers kept aside that the arrays now reach move in.
            for (n, entry) in far where n < UInt64(sessions.count) {
                sessions[Int(n)] = entry.sessions
                lastActivation[Int(n)] = entry.lastActivation
                far[n] = nil
            }
        }
        if sessions[i] == 0 || now.microseconds - lastActivation[i] >= gap.microseconds { sessions[i] += 1 }
        lastActivation[i] = now.microseconds
    }

    mutating func remove(_ id: SessionID) {
        guard id.rawValue < UInt64(sessions.count) else {
            far[id.rawValue] = nil
            return
        }
        let i = Int(id.rawValue)
        sessions[i] = 0
        lastActivation[i] = 0
        while let last = sessions.last, last == 0 {
            sessions.removeLast()
            lastActivation.removeLast()
        }
    }
}
