import SceneCore

/// A replayable trace (reclaim-policy.md §3.7): events on a virtual clock in milliseconds.
///
/// The JSON-lines format, one event per line (blank lines and lines starting with `#` are
/// skipped):
/// ```
/// {"t":0,"ev":"meta","scenario":"mix","seed":1}          generator provenance (optional)
/// {"t":0,"ev":"budget","bytes":1.5e9}                    absolute budget
/// {"t":0,"ev":"budget","scale":0.7}                      budget = base budget × scale
/// {"t":0,"ev":"budget","bytes":null}                     no budget (unlimited)
/// {"t":0,"ev":"open","scene":"a","mem":180e6,"restore_ms":900,"state_bytes":40e3,"flags":[],"app":"x"}
/// {"t":1200,"ev":"activate","scene":"a"}                 also deactivate, background, suspend, close
/// {"t":5000,"ev":"mem","scene":"a","mem":220e6}          the scene's resident size changes
/// {"t":5000,"ev":"app_mem","app":"x","mem":30e6}         an app's own (process) footprint
/// {"t":6000,"ev":"protect","scene":"a","on":true}        protection flag on or off
/// {"t":9100,"ev":"pressure","level":"warning"}           explicit level until the next one;
///                                                        "warn" = warning, "auto" = back to the gauge
/// {"t":9200,"ev":"ack_profile","scene":"a","latency_ms":120,"defer":false}   null latency = never acks
/// ```
/// Kinds added for the daemon's own history (`scenectl export-trace`); older traces never
/// have them and replay as before:
/// ```
/// {"t":0,"ev":"settings",...}                            the daemon's reclaim and engine settings (TraceSettings)
/// {"t":10,"ev":"launch","app":"x"}                       the app is launched (no scene)
/// {"t":20,"ev":"disconnect","scene":"a"}                 the scene is released on request; its session is kept
/// {"t":30,"ev":"terminate","app":"x"}                    the app is terminated on request
/// {"t":40,"ev":"pressure","level":"critical","for_ms":3000}   an override that lapses by itself
/// {"t":40,"ev":"decide"}                                 the controller is evaluated here
/// ```
/// With `"explicit_decisions":true` in the settings line, the controller is evaluated only at
/// `decide` lines (the daemon's evaluations, one per pass that changed something) and at the
/// times it asks to be woken; otherwise after every line, as for any trace.
/// `open` connects the scene in the background (as a system-requested scene would be); it becomes
/// foreground-active with `activate`. `suspend` suspends the scene's app (refused, and ignored,
/// while the app has a foreground scene or a task). `close` is the user discarding the session.
/// Flags: `protected` (reclaim-policy.md §3.1 T3); others are kept but have no effect.
public struct Trace: Sendable, Equatable {
    public var events: [TraceEvent]
    /// From the `meta` line, when there is one.
    public var scenario: String?
    public var seed: UInt64?
    /// From the `settings` line, when there is one (an exported trace).
    public var settings: TraceSettings?

    public init(events: [TraceEvent], scenario: String? = nil, seed: UInt64? = nil, settings: TraceSettings? = nil) {
        self.events = events
        self.scenario = scenario
        self.seed = seed
        self.settings = settings
    }

    /// Milliseconds from the first to the last event.
    public var duration: Int64 { (events.last?.time ?? 0) - (events.first?.time ?? 0) }
}

public struct TraceEvent: Sendable, Equatable {
    /// Virtual time, milliseconds.
    public var time: Int64
    public var kind: Kind
    /// 1-based line in the source file (0 for generated events).
    public var line: Int

    public init(time: Int64, _ kind: Kind, line: Int = 0) {
        self.time = time
        self.kind = kind
        self.line = line
    }

    public enum Kind: Sendable, Equatable {
        case meta(scenario: String?, seed: UInt64?)
        case open(TraceScene)
        case activate(String)
        case deactivate(String)
        case background(String)
        case suspend(String)
        case close(String)
        case mem(scene: String, bytes: UInt64)
        case appMem(app: String, bytes: UInt64)
        case protect(scene: String, on: Bool)
        case budget(TraceBudget)
        /// nil: back to the gauge.
        case pressure(PressureLevel?)
        case ackProfile(AckProfile)
        case settings(TraceSettings)
        case launch(app: String)
        case terminate(app: String)
        case disconnect(String)
        /// An override for this many milliseconds, then back to the gauge.
        case timedPressure(PressureLevel, durationMs: Int64)
        /// The controller is evaluated (with explicit decisions).
        case decide
    }
}

public struct TraceScene: Sendable, Equatable {
    public var name: String
    /// The app the scene belongs to; nil = an app of its own.
    public var app: String?
    public var bytes: UInt64
    public var restoreMs: UInt32
    /// Bytes of saved state the session keeps when disconnected (recorded; the engine's
    /// footprint is what a disconnect frees).
    public var stateBytes: UInt64
    public var flags: [String]

    public init(name: String, app: String? = nil, bytes: UInt64, restoreMs: UInt32, stateBytes: UInt64 = 0,
                flags: [String] = []) {
        self.name = name
        self.app = app
        self.bytes = bytes
        self.restoreMs = restoreMs
        self.stateBytes = stateBytes
        self.flags = flags
    }

    public var isProtected: Bool { flags.contains("protected") }
}

public enum TraceBudget: Sendable, Equatable {
    case bytes(UInt64)
    /// A fraction of the base budget (the first absolute one, or the caller's override).
    case scale(Double)
    case unlimited
}

/// How a scene would answer a disconnect notice. The daemon has no acknowledgement protocol, so
/// the replayer only records these and reports how many reclaim victims had each profile.
public struct AckProfile: Sendable, Equatable {
    public var scene: String
    /// nil: never acknowledges.
    public var latencyMs: Int64?
    public var defers: Bool

    public init(scene: String, latencyMs: Int64?, defers: Bool) {
        self.scene = scene
        self.latencyMs = latencyMs
        self.defers = defers
    }
}
