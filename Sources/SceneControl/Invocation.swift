import SceneInterface
import Varlink

/// One run of one verb: its parsed command line, the context, and a connection to the daemon
/// opened on first use (so usage errors and --help never connect).
public final class Invocation {
    public let verb: Verb
    public let global: GlobalOptions
    public let options: ParsedOptions
    public let arguments: [String]
    public let context: Context
    let time: TimeFormatter
    private var transport: ManagerTransport?

    /// How long a non-streaming call may wait for its reply (systemctl's D-Bus default).
    static let replyTimeout = Duration.seconds(25)

    init(verb: Verb, global: GlobalOptions, options: ParsedOptions, arguments: [String], context: Context) {
        self.verb = verb
        self.global = global
        self.options = options
        self.arguments = arguments
        self.context = context
        time = TimeFormatter(utc: context.utc)
    }

    private(set) lazy var socket = SocketLocation.resolve(explicit: global.socket, context: context)

    // MARK: Calls

    /// Calls `io.scened.Manager.<method>`. Error replies are thrown as `VarlinkError` (mapped
    /// to an exit status by the caller); transport failures as `ControlError`.
    func call(_ method: String, _ parameters: JSONObject = [:]) throws -> JSONObject {
        let connection = try connect()
        do {
            return try connection.call(ErrorReport.interface + "." + method, parameters)
        } catch let error as VarlinkClientError {
            throw ErrorReport.control(for: error, socket: socket, noneExisted: false)
        }
    }

    /// Calls `io.scened.App.<method>` (an app's own requests, made for it by its owner or an
    /// administrator), on the same connection.
    func callApp(_ method: String, _ parameters: JSONObject) throws -> JSONObject {
        let connection = try connect()
        do {
            return try connection.call(AppInterface.name + "." + method, parameters)
        } catch let error as VarlinkClientError {
            throw ErrorReport.control(for: error, socket: socket, noneExisted: false)
        }
    }

    /// Calls with `more`; see `ManagerTransport.callMore`.
    func callMore(_ method: String, _ parameters: JSONObject = [:], each: (JSONObject) throws -> Bool) throws {
        let connection = try connect()
        do {
            try connection.callMore(ErrorReport.interface + "." + method, parameters, each: each)
        } catch let error as VarlinkClientError {
            throw ErrorReport.control(for: error, socket: socket, noneExisted: false)
        }
    }

    /// A connection of its own (top queries on one while Monitor streams on another); `timeout`
    /// nil for a stream.
    func openConnection(timeout: Duration?) throws -> ManagerTransport {
        do {
            return try context.connect(socket.path, timeout)
        } catch let error as VarlinkClientError {
            throw ErrorReport.control(for: error, socket: socket, noneExisted: socket.noneExisted(context))
        }
    }

    /// What becomes readable when the daemon closes the connection opened for `call`, if it
    /// is open and can be polled.
    var hangUpDescriptor: Int32? { transport?.hangUpDescriptor }

    private func connect() throws -> ManagerTransport {
        if let transport { return transport }
        do {
            let opened = try context.connect(socket.path, verb.streaming ? nil : Self.replyTimeout)
            transport = opened
            return opened
        } catch let error as VarlinkClientError {
            throw ErrorReport.control(for: error, socket: socket, noneExisted: socket.noneExisted(context))
        }
    }

    // MARK: Output

    /// Writes `text` and a newline to stdout.
    func line(_ text: String) throws {
        try context.out.write(text + "\n")
    }

    /// Writes `text` as it is (tables and blocks end with their own newline).
    func write(_ text: String) throws {
        try context.out.write(text)
    }

    /// One JSON object: compact on one line (--json, --json=short), or indented (--json=pretty).
    func json(_ object: JSONObject) throws {
        if global.jsonMode == .pretty {
            try line(PrettyJSON.render(.object(object)))
        } else {
            try line(JSONValue.object(object).serializedString())
        }
    }

    /// Quiet on success like systemctl; --json prints the reply, -v the events it caused, and
    /// -q nothing at all.
    func reportChange(_ reply: JSONObject, primary: String? = nil) throws {
        if global.quiet { return }
        if global.json {
            try json(reply)
            return
        }
        if let primary { try line(primary) }
        if global.verbose, let events = reply["events"]?.arrayValue {
            try write(EventTable.table(events.compactMap(\.objectValue)).render(legend: !global.noLegend))
        }
    }
}
