import SceneCore

/// `[Routing]`: the bounds on what Open carries and keeps. A URL or an activity is held in
/// memory, written to the event log and, for an app that is not running, stored until its
/// launch: each is bounded, and so is what one app may have waiting.
struct RoutingSettings: Equatable, Sendable {
    var maxURLSize = 8 << 10
    var maxActivitySize = 16 << 10
    var maxPendingOpens = 16

    static let keys: [SettingKey] = [
        size("MaxURLSize", \.routing.maxURLSize, 16...(1 << 20)),
        size("MaxActivitySize", \.routing.maxActivitySize, 64...(4 << 20)),
        SettingKey(section: "Routing", key: "MaxPendingOpens", apply: { s, v in
            guard let n = Int(v.trimmingSpaces), (1...10_000).contains(n) else { return "MaxPendingOpens= must be 1 to 10000" }
            s.routing.maxPendingOpens = n
            return nil
        }, show: { "\($0.routing.maxPendingOpens)" }),
    ]

    private static func size(_ key: String, _ path: WritableKeyPath<DaemonSettings, Int> & Sendable,
                             _ range: ClosedRange<Int>) -> SettingKey {
        SettingKey(section: "Routing", key: key, apply: { s, v in
            let text = { (n: Int) in ConfigValues.formatBytes(UInt64(n)) }
            guard let bytes = ConfigValues.bytes(v), bytes <= UInt64(range.upperBound), range.contains(Int(bytes)) else {
                return "\(key)= must be a size from \(text(range.lowerBound)) to \(text(range.upperBound))"
            }
            s[keyPath: path] = Int(bytes)
            return nil
        }, show: { ConfigValues.formatBytes(UInt64($0[keyPath: path])) })
    }
}
