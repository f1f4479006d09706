/// Settings of the reclaim policy (reclaim-policy.md §3).
public struct ReclaimConfiguration: Sendable, Equatable {
    /// Memory the sessions may use; the watermarks are fractions of it.
    public var budget: UInt64
    public var watermarks: Watermarks
    /// A scene that has just gone to the background is not reclaimed at warning for this long
    /// (jetsam's aging band, Android's freeze delay: 10 s).
    public var aging: TimeSpan
    /// After a batch of actions, wait this long for the freed memory to show before deciding
    /// again (lmkd waits for the victim's death, oomd 15 s, jetsam 500 ms).
    public var settle: TimeSpan
    /// At most this many disconnects and terminations per batch.
    public var maxVictimsPerBatch: Int
    /// Restore cost assumed for a session that declares none, milliseconds.
    public var defaultRestoreCostMs: UInt32
    /// A reclaimed session activated again within this window counts as a regret; it then ages
    /// longer before it can be reclaimed again (×2 per regret, up to ×8).
    public var regretWindow: TimeSpan
    /// Suspend idle background apps at once when pressure starts, instead of after their delay.
    public var suspendEarly: Bool
    /// At critical, terminate suspended apps (no callback, as jetsam does).
    public var terminateSuspendedAtCritical: Bool
    /// Caps that discard, oldest archived first (0 = off).
    public var maxSessions: Int
    public var archivedMaxAge: TimeSpan
    /// At most this many cap discards per decision (rate limit).
    public var maxDiscardsPerDecision: Int

    public init(budget: UInt64 = 8 << 30, watermarks: Watermarks = Watermarks(), aging: TimeSpan = .seconds(10),
                settle: TimeSpan = .seconds(1), maxVictimsPerBatch: Int = 32, defaultRestoreCostMs: UInt32 = 500,
                regretWindow: TimeSpan = .seconds(60), suspendEarly: Bool = true,
                terminateSuspendedAtCritical: Bool = true, maxSessions: Int = 0,
                archivedMaxAge: TimeSpan = .zero, maxDiscardsPerDecision: Int = 1000) {
        self.budget = budget
        self.watermarks = watermarks
        self.aging = aging
        self.settle = settle
        self.maxVictimsPerBatch = maxVictimsPerBatch
        self.defaultRestoreCostMs = defaultRestoreCostMs
        self.regretWindow = regretWindow
        self.suspendEarly = suspendEarly
        self.terminateSuspendedAtCritical = terminateSuspendedAtCritical
        self.maxSessions = maxSessions
        self.archivedMaxAge = archivedMaxAge
        self.maxDiscardsPerDecision = maxDiscardsPerDecision
    }

    public var lowTarget: UInt64 { UInt64(Double(budget) * watermarks.low) }
}

/// How victims are ordered. `ours` is the policy; the others are the baselines the trace
/// replayer compares it with. All share the ladder, the eligibility rules and the byte target,
/// so a comparison isolates the choice of victims.
public enum VictimOrder: String, Sendable, CaseIterable {
    /// Lowest value per byte first, GreedyDual-Size-Frequency style: (usage sessions used in +
    /// recent activations + a prior of one session) × (1 + restore cost ÷ the candidates' mean
    /// restore cost) ÷ bytes freed (`ReclaimPolicy.valueScore`); ties to the least recently
    /// used, then the larger.
    case ours
    /// Least recently foreground-active first.
    case lru
    /// Largest footprint first.
    case largest
    /// Chrome's tab discarding: protected last, then the oldest visibility change (background
    /// entry) first.
    case chrome
    /// Android lmkd: scenes of suspended apps before those of running ones (the cached band),
    /// LRU within a band.
    case lmkd
    /// Belady's offline optimum on restore counts: the scene used again farthest in the future
    /// (never again first). Needs an oracle; replayer only.
    case opt
}
