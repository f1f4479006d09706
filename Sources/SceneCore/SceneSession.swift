/// A scene session (`UISceneSession`): outlives its scenes, and persists across app and daemon
/// restarts until it is discarded.
public struct SceneSession: Sendable, Equatable {
    /// The largest footprint a scene (or an app's own memory) may declare: 1 TiB. Far beyond
    /// any real scene, and small enough that totals over millions of sessions cannot overflow.
    public static let maxFootprint: UInt64 = 1 << 40

    // Stored properties are ordered by size (8-byte, then 4, then 1) so that the struct packs
    // without padding: a daemon holds a million of these.
    public let id: SessionID
    /// Settable inside the core only: a restored session takes its app record's copy of the id.
    public internal(set) var app: AppID
    /// configurationName, userInfo and restoration: one reference instead of 49 bytes inline
    /// (see SessionDetails), or none for the defaults (`SessionDetails.standard`), which most
    /// sessions have, so that the threads restoring a large table do not all count references
    /// to one shared object and contend for its cache line.
    private(set) var ownDetails: SessionDetails?
    /// Bytes this session's scene holds while connected; what a disconnect frees.
    public var footprint: UInt64
    public let createdAt: Timestamp
    /// Last time the scene was foregroundActive (or created, if never).
    public var lastActiveAt: Timestamp
    /// When the scene last entered the background; reclaim ages scenes from here.
    public var backgroundSince: Timestamp
    /// Activations counted with exponential decay (half-life `SceneSession.activationHalfLife`),
    /// as of `lastActiveAt`: how much the session is used lately. Reclaim weighs it.
    public var activationScore: Double
    /// How many scene instances this session has had; a reconnection makes a new one (R2).
    public var sceneInstance: UInt32
    /// How many times the scene became active.
    public var activations: UInt32
    /// How many times the session was reconnected from archived.
    public var restores: UInt32
    /// Declared cost of restoring this session, in milliseconds (0 = unknown).
    public var restoreCostMs: UInt32
    /// The engine's slot for `app` (see AppTable); -1 outside an engine. Not part of equality.
    var appSlot: Int32 = -1
    public let role: SessionRole
    public var condition: SessionCondition
    /// The connected scene's activation state; `unattached` while archived.
    public var sceneState: SceneActivationState
    /// Protected sessions are reclaimed only as a last resort (reclaim-policy.md §3.1, T3).
    public var isProtected: Bool

    public init(id: SessionID, app: AppID, role: SessionRole, configurationName: String,
                userInfo: UserInfo, restoration: RestorationData?, footprint: UInt64,
                condition: SessionCondition, sceneState: SceneActivationState, sceneInstance: UInt32,
                createdAt: Timestamp, lastActiveAt: Timestamp, backgroundSince: Timestamp,
                activations: UInt32, restores: UInt32, restoreCostMs: UInt32, isProtected: Bool,
                activationScore: Double = 0) {
        self.init(id: id, app: app, role: role, configurationName: configurationName, savedUserInfo: .held(userInfo),
                  savedRestoration: .held(restoration), footprint: footprint, condition: condition,
                  sceneState: sceneState, sceneInstance: sceneInstance, createdAt: createdAt,
                  lastActiveAt: lastActiveAt, backgroundSince: backgroundSince, activations: activations,
                  restores: restores, restoreCostMs: restoreCostMs, isProtected: isProtected,
                  activationScore: activationScore)
    }

    /// A session whose payloads may be left in the store (a start-up that defers them).
    public init(id: SessionID, app: AppID, role: SessionRole, configurationName: String,
                savedUserInfo: SavedPayload<UserInfo>, savedRestoration: SavedPayload<RestorationData?>,
                footprint: UInt64, condition: SessionCondition, sceneState: SceneActivationState,
                sceneInstance: UInt32, createdAt: Timestamp, lastActiveAt: Timestamp, backgroundSince: Timestamp,
                activations: UInt32, restores: UInt32, restoreCostMs: UInt32, isProtected: Bool,
                activationScore: Double = 0) {
        self.id = id
        self.app = app
        self.role = role
        ownDetails = SessionDetails.unlessStandard(configurationName, savedUserInfo, savedRestoration)
        self.footprint = footprint
        self.condition = condition
        self.sceneState = sceneState
        self.sceneInstance = sceneInstance
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt
        self.backgroundSince = backgroundSince
        self.activations = activations
        self.activationScore = activationScore
        self.restores = restores
        self.restoreCostMs = restoreCostMs
        self.isProtected = isProtected
    }

    public var isConnected: Bool { condition == .live }

    var details: SessionDetails {
        get { ownDetails ?? SessionDetails.standard }
        set { ownDetails = newValue === SessionDetails.standard ? nil : newValue }
    }

    public var configurationName: String { details.configurationName }

    /// The held userInfo. A payload left in the store (`savedUserInfo` is `.stored`) is read
    /// through the store first: asking for it here is a programming error and traps.
    public var userInfo: UserInfo {
        get {
            guard case .held(let v) = details.userInfo else { preconditionFailure("userInfo of \(id) is in the store") }
            return v
        }
        set { details = SessionDetails.make(details.configurationName, .held(newValue), details.restoration) }
    }

    /// The held restoration data; traps for data left in the store, as `userInfo` does.
    public var restoration: RestorationData? {
        get {
            guard case .held(let v) = details.restoration else {
                preconditionFailure("the restoration data of \(id) is in the store")
            }
            return v
        }
        set { details = SessionDetails.make(details.configurationName, details.userInfo, .held(newValue)) }
    }

    public var savedUserInfo: SavedPayload<UserInfo> { details.userInfo }
    public var savedRestoration: SavedPayload<RestorationData?> { details.restoration }
    /// Whether either payload is only in the store.
    public var hasStoredPayload: Bool { details.userInfo.isStored || details.restoration.isStored }

    /// Which saved data this session holds: what a commit wrote, to be released once it is
    /// on disk if the session has not changed since (`LifecycleEngine.releaseSavedData`).
    public var savedDataVersion: SavedDataVersion { SavedDataVersion(details: details) }

    /// Every stored field; the engine's internal slot does not count.
    public static func == (a: SceneSession, b: SceneSession) -> Bool {
        a.id == b.id && a.app == b.app && a.role == b.role && a.details == b.details && a.footprint == b.footprint
            && a.condition == b.condition && a.sceneState == b.sceneState && a.sceneInstance == b.sceneInstance
            && a.createdAt == b.createdAt && a.lastActiveAt == b.lastActiveAt && a.backgroundSince == b.backgroundSince
            && a.activations == b.activations && a.activationScore.bitPattern == b.activationScore.bitPattern
            && a.restores == b.restores && a.restoreCostMs == b.restoreCostMs && a.isProtected == b.isProtected
    }

    public static let activationHalfLife = TimeSpan.seconds(30 * 60)

    /// `activationScore` decayed from `lastActiveAt` to `now`.
    public func activationScore(at now: Timestamp) -> Double {
        Self.decayed(activationScore, since: lastActiveAt, at: now)
    }

    /// A score as of `lastActiveAt`, decayed to `now`: one arithmetic for the session and the
    /// copies reclaim reads (CandidateIndex.Entry), so that both rank alike.
    @inline(__always)
    static func decayed(_ score: Double, since lastActiveAt: Timestamp, at now: Timestamp) -> Double {
        let elapsed = now.microseconds - lastActiveAt.microseconds
        // No decay to compute for a score of zero, the usual one of a scene never activated.
        guard elapsed > 0, score != 0 else { return score }
        return score * decay(elapsed)
    }

    /// 2^(-elapsed / half-life), without Foundation's pow: exp2 of the integer part by shifting
    /// and a short series for the fraction.
    static func decay(_ elapsedMicroseconds: Int64) -> Double {
        let halves = Double(elapsedMicroseconds) / Double(activationHalfLife.microseconds)
        if halves > 60 { return 0 }
        let whole = Int(halves)
        let fraction = halves - Double(whole)
        // 2^-x = e^(-x ln 2); the series converges fast for 0 ≤ x < 1.
        let y = -fraction * 0.6931471805599453
        var term = 1.0, sum = 1.0
        for k in 1...12 {
            term *= y / Double(k)
            sum += term
        }
        return sum / Double(UInt64(1) << UInt64(whole))
    }
}

/// The parts of a session that are set at connection or rarely saved, and that most sessions
/// have in common: out of line, immutable (a change makes a new one), and shared. A million
/// sessions with the default configuration, no userInfo and no restoration data hold one.
final class SessionDetails: Sendable, Equatable {
    let configurationName: String
    let userInfo: SavedPayload<UserInfo>
    let restoration: SavedPayload<RestorationData?>

    private init(_ configurationName: String, _ userInfo: SavedPayload<UserInfo>,
                 _ restoration: SavedPayload<RestorationData?>) {
        self.configurationName = configurationName
        self.userInfo = userInfo
        self.restoration = restoration
    }

    /// What a session gets when it asks for nothing: a constant, not state.
    static let standard = SessionDetails(ConnectRequest.defaultConfigurationName, .held(.empty), .held(nil))

    static func make(_ configurationName: String, _ userInfo: UserInfo, _ restoration: RestorationData?) -> SessionDetails {
        make(configurationName, .held(userInfo), .held(restoration))
    }

    static func make(_ configurationName: String, _ userInfo: SavedPayload<UserInfo>,
                     _ restoration: SavedPayload<RestorationData?>) -> SessionDetails {
        unlessStandard(configurationName, userInfo, restoration) ?? standard
    }

    /// New details, or nil for the standard ones: compared with constants, without touching
    /// the standard object (whose reference count every thread would write).
    static func unlessStandard(_ configurationName: String, _ userInfo: SavedPayload<UserInfo>,
                               _ restoration: SavedPayload<RestorationData?>) -> SessionDetails? {
        if case .held(nil) = restoration, case .held(let u) = userInfo, u == .empty,
           configurationName == ConnectRequest.defaultConfigurationName {
            return nil
        }
        return SessionDetails(configurationName, userInfo, restoration)
    }

    /// Without a restoration or userInfo: what interning may share among sessions.
    var isPlain: Bool { restoration == Self.standard.restoration && userInfo == Self.standard.userInfo }

    var hasLargeHeldPayload: Bool {
        if self === Self.standard { return false }
        let limit = savedPayloadInlineLimit
        return (!userInfo.isStored && userInfo.byteCount > limit) || (!restoration.isStored && restoration.byteCount > limit)
    }

    /// These details with every held payload over the inline limit left to the store; `self`
    /// when there is none.
    func releasingLarge() -> SessionDetails {
        // Most details have nothing to release: no comparison of payloads for them.
        guard hasLargeHeldPayload else { return self }
        var u = userInfo, r = restoration
        if case .held = u, u.byteCount > savedPayloadInlineLimit { u = .stored(byteCount: u.byteCount) }
        if case .held = r, r.byteCount > savedPayloadInlineLimit { r = .stored(byteCount: r.byteCount) }
        return SessionDetails(configurationName, u, r)
    }

    /// These details with the store's copies of stored payloads put back in memory.
    func holding(userInfo read: UserInfo, restoration readRestoration: RestorationData?) -> SessionDetails {
        let u: SavedPayload<UserInfo> = userInfo.isStored ? .held(read) : userInfo
        let r: SavedPayload<RestorationData?> = restoration.isStored ? .held(readRestoration) : restoration
        return Self.make(configurationName, u, r)
    }

    /// Held payloads compare by value; stored ones by size only (their bytes are not here), and
    /// a held payload never equals a stored one.
    static func == (a: SessionDetails, b: SessionDetails) -> Bool {
        a === b || (a.configurationName == b.configurationName && a.userInfo == b.userInfo && a.restoration == b.restoration)
    }
}

/// A session's details as a commit wrote them; compared by identity, since details are
/// immutable and every change makes new ones (the reference keeps the object alive, so the
/// identity cannot be reused while this exists).
public struct SavedDataVersion: Sendable {
    let details: SessionDetails

    /// Whether releasing this version would leave anything to the store.
    public var hasLargePayload: Bool { details.hasLargeHeldPayload }
}
