/// What the reclaim policy asks the engine to do, each with its reason.
public enum ReclaimAction: Sendable, Equatable {
    /// didReceiveMemoryWarning to these running apps (once per episode).
    case memoryWarning([AppID])
    /// Suspend an idle background app now rather than after its delay.
    case suspend(AppID)
    /// Release a background scene; the session is kept (R12).
    case disconnect(SessionID)
    /// Terminate a suspended app (critical only); its sessions stay archived.
    case terminate(AppID)
    /// A cap (MaxSessions, archived maximum age) discards an archived session. Never pressure.
    case discard(SessionID)
}

public struct ReclaimStep: Sendable, Equatable {
    public var action: ReclaimAction
    public var note: ReclaimNote
}

/// One pressure episode: from leaving normal to returning to it.
public struct ReclaimEpisode: Sendable, Equatable {
    public var number: Int
    public var startedAt: Timestamp
    public var endedAt: Timestamp?
    public var peakLevel: PressureLevel
    public var usageAtStart: UInt64
    /// First time usage was back at or below the low watermark.
    public var relievedAt: Timestamp?
    public var warned = false
    public var unrelievable = false
    public var disconnects = 0
    public var terminations = 0
    public var suspensions = 0
    public var bytesFreed: UInt64 = 0
}

public struct ReclaimPlan: Sendable, Equatable {
    public var steps: [ReclaimStep] = []
    /// Only foreground and protected scenes are left and usage is still over the target.
    public var unrelievable = false
    public var episodeStarted = false
    public var episodeEnded = false
    /// Decide again no later than this (end of the settle time), if pressure persists.
    public var nextDecision: Timestamp?
}
