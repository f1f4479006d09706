import SceneCore

/// The §2 metrics of one replay (one policy, one trace, one budget). Every count is over the
/// whole replay, from the first trace event to the end of the tail the replayer runs after the
/// last one (until pressure has ended, at most `ReplaySettings.tail`).
public struct ReplayMetrics: Sendable, Equatable {
    public var policy: VictimOrder
    /// The base budget the replay ran with (bytes; nil = unlimited).
    public var budget: UInt64?
    /// Peak resident bytes of the same trace with an unlimited budget (no reclaim at all).
    public var workingSet: UInt64 = 0

    /// Activations: `activate` events that made a scene foreground-active (a scene already
    /// active does not count).
    public var activations = 0
    /// Reactivations: activations of a session that had been active before (the first activation
    /// after `open` is a cold start and not a candidate for a restore).
    public var reactivations = 0
    /// **Restores**: activations of a session that was not connected at that moment because
    /// reclaim had released it: disconnected by the policy (archived), or its app terminated by
    /// the policy. Also counted: activating a session a cap discarded (it comes back cold).
    public var restores = 0
    /// **Weighted restore cost**: Σ over restores of the session's declared `restore_ms`, in
    /// milliseconds.
    public var weightedRestoreCost: UInt64 = 0
    /// **Peak memory**: the maximum of the engine's `residentBytes` (apps' base footprints plus
    /// connected scenes) over the replay, sampled after every change.
    public var peakBytes: UInt64 = 0
    /// The maximum of resident − budget over the replay (0 if never over).
    public var peakOverBudget: UInt64 = 0
    /// **Overshoot**: ∫ max(0, resident − budget) dt over the replay, in byte-seconds (resident
    /// and budget are step functions between changes).
    public var overshoot: Double = 0
    /// Pressure episodes: from the level leaving normal to its return to normal.
    public var episodes = 0
    /// **Time to relief**, one per relieved episode: from the episode's onset to the first moment
    /// resident ≤ low watermark × budget, in milliseconds (0 if already there at onset).
    public var timesToRelief: [Int64] = []
    /// Episodes that ended, or were still open at the end, without relief.
    public var unrelievedEpisodes = 0
    /// **Foreground violations**: reclaim actions aimed at a foreground scene (active or
    /// inactive): a disconnect of such a scene or a termination of an app that has one, whether
    /// the engine refused it (as it must) or not. Memory warnings are trims and allowed.
    public var foregroundViolations = 0
    /// **Discards caused by pressure**: sessions destroyed while executing a reclaim plan other
    /// than by a cap discard of an archived session with a cap configured. Must be 0 (R12).
    public var pressureDiscards = 0
    /// Sessions a cap (MaxSessions, ArchivedMaxAge) discarded.
    public var capDiscards = 0
    /// Reclaim commands the engine refused for any reason (foreground ones included).
    public var refusedCommands = 0
    /// Scenes released by the policy: disconnects plus the live scenes of terminated apps.
    public var victims = 0
    public var disconnects = 0
    public var terminations = 0
    public var suspensions = 0
    /// Memory-warning rounds (each to all running apps).
    public var warnings = 0
    /// Victims that were protected sessions (the policy never chooses them; a check).
    public var protectedVictims = 0
    /// **Regrets**: victims activated again within the regret window (60 s) of being released.
    public var regrets = 0
    /// Per batch, bytes freed beyond the batch's target (resident − low watermark); summed.
    public var overkillBytes: UInt64 = 0
    /// Plans that reported pressure the policy could not relieve.
    public var unrelievablePlans = 0
    /// Calls of `decide`.
    public var decisions = 0
    /// **Decision cost**: wall time of each `decide` call, microseconds (empty without a clock).
    public var decisionMicros: [Double] = []
    /// Victims whose trace `ack_profile` says they would answer late (latency above
    /// `ReplaySettings.slowAckMs`), defer, or never answer. Recorded only: the daemon has no
    /// acknowledgement protocol, so these are the victims such a protocol would have delayed.
    public var slowAckVictims = 0
    public var deferringVictims = 0
    public var silentVictims = 0
    /// The reclaim grace (§3.5, `ReplaySettings.grace`): notices given before disconnects of
    /// scenes with an ack profile, answered ack, deferred, or left to their deadline.
    public var graceNotices = 0
    public var graceAcks = 0
    public var graceDeferrals = 0
    public var graceTimeouts = 0
    /// Trace commands the engine refused (e.g. `suspend` of an app with a foreground scene);
    /// they are skipped.
    public var traceRefusals = 0

    public init(policy: VictimOrder) { self.policy = policy }

    /// **Restore ratio**: restores ÷ reactivations (0 with none); 1 − it is the hot-resume ratio.
    public var restoreRatio: Double { reactivations == 0 ? 0 : Double(restores) / Double(reactivations) }
    /// **Regret rate**: regrets ÷ victims (0 with no victims).
    public var regretRate: Double { victims == 0 ? 0 : Double(regrets) / Double(victims) }
    public var decisionMicrosP50: Double { Percentile.of(decisionMicros, 50) }
    public var decisionMicrosP99: Double { Percentile.of(decisionMicros, 99) }
    public var timeToReliefP50: Int64 { Percentile.of(timesToRelief, 50) }
    public var timeToReliefP99: Int64 { Percentile.of(timesToRelief, 99) }
    public var timeToReliefMax: Int64 { timesToRelief.max() ?? 0 }
}

/// Nearest-rank percentiles: the smallest value with at least p % of the samples at or below it.
public enum Percentile {
    public static func of<T: Comparable & AdditiveArithmetic>(_ values: [T], _ p: Double) -> T {
        guard !values.isEmpty else { return .zero }
        let sorted = values.sorted()
        var rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        rank = min(max(rank, 1), sorted.count)
        return sorted[rank - 1]
    }
}

/// **Gap closed** = (LRU − policy) ÷ (LRU − OPT) on restore counts: the share of the distance
/// from LRU to Belady's offline optimum that the policy covers. 1 = as good as OPT, 0 = as LRU,
/// negative = worse than LRU. Undefined (nil) when OPT does not beat LRU on the trace.
public func gapClosed(lru: Int, policy: Int, opt: Int) -> Double? {
    guard lru > opt else { return nil }
    return Double(lru - policy) / Double(lru - opt)
}
