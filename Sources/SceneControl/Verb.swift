/// One scenectl command. The verb table (`Verb.all`) is the single list that parsing, help
/// and dispatch read, so adding a command is one `Verb` value plus one entry there.
public struct Verb: Sendable {
    /// "list", or two words for a group ("task begin").
    public var name: String
    public var section: Section
    /// What follows the name in help: "SESSION [-n N]".
    public var synopsis: String
    /// One line for `scenectl --help`.
    public var summary: String
    /// A paragraph for `scenectl VERB --help`; empty for none.
    public var details: String
    public var options: [OptionSpec]
    /// How many positional arguments the verb takes.
    public var arguments: ClosedRange<Int>
    /// Streams (monitor): no reply timeout.
    public var streaming: Bool
    /// Its output may go through a pager: not for what streams or redraws the screen.
    public var pages: Bool
    /// Its arguments are a command to run: options end at the first of them, as with env(1).
    public var takesCommand: Bool
    public var run: @Sendable (Invocation) throws -> Void

    public enum Section: String, Sendable, CaseIterable {
        case daemon = "Daemon"
        case sessions = "Sessions"
        case apps = "Apps"
        case tasks = "Background tasks"
        case routing = "URLs and activities"
        case system = "Interruptions"
    }

    public init(_ name: String, section: Section, synopsis: String = "", summary: String, details: String = "",
                options: [OptionSpec] = [], arguments: ClosedRange<Int> = 0...0, takesCommand: Bool = false,
                streaming: Bool = false, pages: Bool? = nil, run: @escaping @Sendable (Invocation) throws -> Void) {
        self.name = name
        self.section = section
        self.synopsis = synopsis
        self.summary = summary
        self.details = details
        self.options = options
        self.arguments = arguments
        self.streaming = streaming
        self.pages = pages ?? !streaming
        self.takesCommand = takesCommand
        self.run = run
    }

    /// Every verb, in help order.
    public static let all: [Verb] = [
        .status, .reload, .monitor, .top, .logs, .pressure, .pressureSet, .pressureClear, .pressurePlan, .pressureChart, .simulate, .exportTrace,
        .metrics,
        .list, .show, .connect, .activate, .deactivate, .background, .disconnect, .discard,
        .saveState, .setUserInfo, .setFootprint, .setProtected,
        .apps, .showApp, .launch, .terminate, .memoryWarning, .setAppFootprint,
        .open, .routes, .desktopEntries,
        .tasks, .taskBegin, .taskEnd, .notify, .schedule, .cancelTask,
        .interrupt, .endInterruption,
    ]

    /// The verb run when none is given, as loginctl lists sessions.
    static let defaultName = "list"
}
