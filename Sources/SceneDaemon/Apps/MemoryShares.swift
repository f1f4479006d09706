import SceneCore

/// How the memory a started app really holds is charged, so that the reclaim policy weighs
/// measured bytes instead of declared ones. Pure: the shell reads each app's total (its
/// cgroup's memory.current, else the Pss of its processes) and carries out the commands that
/// come back, which set the engine's figures like SetAppFootprint and SetFootprint would.
///
/// The charge: the app's own part (its base) is what it holds with no live scene — learned
/// from a reading taken while it had none, else its declared base, never more than the total;
/// the rest is split evenly among its live scenes (scenes of one app are alike: windows of
/// the same program). So a disconnect is expected to free one scene's share.
///
/// After a reclaim disconnect the app's readings are held back until the freed memory shows
/// (the total falls by half the share or more: allocators keep some) or the hold ends: a
/// reading taken before the app let go would charge the memory to its other scenes and make
/// the policy take more than it must.
struct MemoryShares {
    struct App: Equatable, Sendable {
        /// What the app holds with no live scene, once seen.
        var base: UInt64?
        var total: UInt64 = 0
        var measuredAt: Timestamp?
        /// Readings above `atMost` are held back until `until`.
        var release: (atMost: UInt64, until: Timestamp)?

        static func == (a: App, b: App) -> Bool {
            a.base == b.base && a.total == b.total && a.measuredAt == b.measuredAt
                && a.release?.atMost == b.release?.atMost && a.release?.until == b.release?.until
        }
    }

    private(set) var apps: [AppID: App] = [:]

    /// Changes smaller than this are not worth a commit: max(64 KiB, 2 %).
    static func differs(_ a: UInt64, _ b: UInt64) -> Bool {
        let delta = a > b ? a - b : b - a
        return delta > max(64 << 10, max(a, b) / 50)
    }

    /// Whether a reclaim batch's freed memory has yet to show somewhere.
    var awaitingRelease: Bool { apps.values.contains { $0.release != nil } }
    /// The sum of the last readings, and how many apps they cover.
    var measuredTotal: (bytes: UInt64, apps: Int) {
        (apps.values.reduce(0) { $0 + $1.total }, apps.count)
    }

    /// A reading of `app`'s total. `live` are its live sessions with the footprint the engine
    /// has for each, `declaredBase` the engine's base for the app. Returns what brings the
    /// engine's figures to the reading (nothing while the reading is held back).
    mutating func reading(_ app: AppID, total: UInt64, live: [(SessionID, UInt64)], declaredBase: UInt64,
                          now: Timestamp) -> [Command] {
        var a = apps[app] ?? App()
        a.total = total
        a.measuredAt = now
        if let release = a.release {
            if total > release.atMost && now < release.until {
                apps[app] = a
                return []
            }
            a.release = nil
        }
        var commands: [Command] = []
        if live.isEmpty {
            a.base = total
            if Self.differs(total, declaredBase) { commands.append(.setAppFootprint(app, total)) }
        } else {
            let base = min(a.base ?? declaredBase, total)
            if Self.differs(base, declaredBase) { commands.append(.setAppFootprint(app, base)) }
            let share = (total - base) / UInt64(live.count)
            for (id, current) in live where Self.differs(share, current) {
                commands.append(.setFootprint(id, share))
            }
        }
        apps[app] = a
        return commands
    }

    /// A reclaim step freed `bytes` of `app` (a scene's share): hold its readings until the
    /// total shows it, or until `until`.
    mutating func reclaimed(_ app: AppID, bytes: UInt64, until: Timestamp) {
        guard var a = apps[app], bytes > 0 else { return }
        let expected = a.total > bytes / 2 ? a.total - bytes / 2 : 0
        a.release = (min(expected, a.release?.atMost ?? expected), max(until, a.release?.until ?? until))
        apps[app] = a
    }

    /// The app's process is gone: nothing of it is measured any more.
    mutating func forget(_ app: AppID) { apps[app] = nil }
}
