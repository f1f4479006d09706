import SceneCore
import SceneTrace

/// Belady's oracle: for each scene, the positions of its activations in the trace, so that the
/// OPT order can ask when a session is next used. A `close` ends the session: a later `open`
/// of the same name is a new session, so activations after a close do not count for it.
public struct NextUseOracle: Sendable {
    struct Use: Sendable {
        var index: Int
        var time: Int64
        var isClose: Bool
    }
    var uses: [String: [Use]] = [:]

    public init(_ trace: Trace) {
        for (i, e) in trace.events.enumerated() {
            switch e.kind {
            case .activate(let s): uses[s, default: []].append(Use(index: i, time: e.time, isClose: false))
            case .close(let s): uses[s, default: []].append(Use(index: i, time: e.time, isClose: true))
            default: break
            }
        }
    }

    /// The time (ms) of the scene's first activation after trace position `index`, or nil if it
    /// is closed first or never used again.
    public func nextActivation(of scene: String, after index: Int) -> Int64? {
        guard let list = uses[scene] else { return nil }
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if list[mid].index <= index { lo = mid + 1 } else { hi = mid }
        }
        guard lo < list.count, !list[lo].isClose else { return nil }
        return list[lo].time
    }
}
