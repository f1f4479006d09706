/// Which connected scene takes an Open (UISceneActivationConditions): pure, so that the rule
/// can be tested without an engine.
///
/// Scenes that prefer the target content identifier come first, then those that can take it;
/// within a tier the most foreground scene wins, then the one most recently active, then the
/// oldest session (so the choice never depends on table order).
public enum SceneSelection {
    /// A connected scene as selection sees it.
    public struct Candidate: Sendable, Equatable {
        public var id: SessionID
        public var state: SceneActivationState
        public var lastActiveAt: Timestamp
        public var conditions: ActivationConditions

        public init(id: SessionID, state: SceneActivationState, lastActiveAt: Timestamp,
                    conditions: ActivationConditions = .default) {
            self.id = id
            self.state = state
            self.lastActiveAt = lastActiveAt
            self.conditions = conditions
        }
    }

    /// The chosen scene, or nil when none accepts the identifier (a new scene is connected).
    public static func choose(_ candidates: [Candidate], target: String?) -> SessionID? {
        var preferred: Candidate?
        var accepted: Candidate?
        for c in candidates where c.state != .unattached {
            if let target, c.conditions.prefersToActivateFor.contains(where: { matches($0, target) }) {
                if preferred.map({ ranks(c, before: $0) }) ?? true { preferred = c }
            } else if preferred == nil, accepts(c.conditions, target) {
                if accepted.map({ ranks(c, before: $0) }) ?? true { accepted = c }
            }
        }
        return (preferred ?? accepted)?.id
    }

    /// canActivateFor: nil accepts anything, even no identifier; a list needs an identifier
    /// that one of its patterns matches.
    public static func accepts(_ conditions: ActivationConditions, _ target: String?) -> Bool {
        guard let patterns = conditions.canActivateFor else { return true }
        guard let target else { return false }
        return patterns.contains { matches($0, target) }
    }

    static func ranks(_ a: Candidate, before b: Candidate) -> Bool {
        let ra = rank(a.state), rb = rank(b.state)
        if ra != rb { return ra < rb }
        if a.lastActiveAt != b.lastActiveAt { return a.lastActiveAt > b.lastActiveAt }
        return a.id < b.id
    }

    private static func rank(_ state: SceneActivationState) -> Int {
        switch state {
        case .foregroundActive: 0
        case .foregroundInactive: 1
        case .background: 2
        case .unattached: 3
        }
    }

    /// Whole-string match of a pattern: "*" any run of characters (none included), "?" exactly
    /// one, anything else itself. Greedy with one backtrack point: linear in practice, never
    /// worse than the product of the lengths (no exponential blow-up on "*a*a*a…").
    public static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.unicodeScalars), t = Array(text.unicodeScalars)
        var i = 0, j = 0
        var star = -1, resume = 0
        while j < t.count {
            if i < p.count && (p[i] == "?" || (p[i] != "*" && p[i] == t[j])) {
                i += 1
                j += 1
            } else if i < p.count && p[i] == "*" {
                star = i
                resume = j
                i += 1
            } else if star >= 0 {
                i = star + 1
                resume += 1
                j = resume
            } else {
                return false
            }
        }
        while i < p.count && p[i] == "*" { i += 1 }
        return i == p.count
    }
}
