public enum ConformanceRule: String, Sendable, CaseIterable, CustomStringConvertible {
    case R1, R2, R3, R4, R5, R6, R7, R8, R9, R10, R11, R12, R13, R14, R15, R16, R17, R18, R19
    case R21, R22, R24, R25, R26, R27, R28, R29, R32, R33, R34
    /// A transition the tables of §1.3/§1.4 do not allow and no numbered rule names.
    case transition
    /// The stream itself: sequence numbers, times, the shape of an event.
    case stream
    /// The event stream and the engine's state disagree: a change happened without its event.
    case agreement
    /// The engine's own bookkeeping is inconsistent.
    case engine

    public var description: String { rawValue }
}

public struct ConformanceViolation: Sendable, Equatable, CustomStringConvertible {
    public var rule: ConformanceRule
    /// The event that exposed it, if any.
    public var seq: UInt64?
    public var app: AppID?
    public var session: SessionID?
    public var message: String

    public init(rule: ConformanceRule, seq: UInt64? = nil, app: AppID? = nil, session: SessionID? = nil,
                message: String) {
        self.rule = rule
        self.seq = seq
        self.app = app
        self.session = session
        self.message = message
    }

    public var description: String {
        var s = "[\(rule)]"
        if let seq { s += " #\(seq)" }
        if let app { s += " \(app)" }
        if let session { s += " \(session)" }
        return s + ": " + message
    }
}
