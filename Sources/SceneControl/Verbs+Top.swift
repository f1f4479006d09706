import Glibc
import SceneCore
import Varlink

extension Verb {
    static let top = Verb(
        "top", section: .daemon, synopsis: "[--delay DURATION] [--order KEY]",
        summary: "Show sessions, apps, memory pressure and reclaim live (q quits)",
        details: "A full-screen view in the manner of systemd-cgtop: what the system holds (a stop or sleep, held interruptions, locked users, how logind is followed), apps and sessions by state with their footprints, the pressure gauge against the budget and its watermarks (|), and the latest reclaim actions. It follows the event stream and asks for status, pressure, apps and sessions again after each change (at most 4 times a second) and every DURATION. Keys: q quits; f, s, n, a sort by footprint, state, name, last activity; r reverses; space refreshes. Without a terminal it prints one screen and exits.",
        options: [
            OptionSpec("delay", short: "d", value: "DURATION", "Refresh at least this often (default: 2s)"),
            OptionSpec("order", short: "o", value: "KEY", "Sort by footprint (default), state, name or activity"),
        ],
        streaming: true, pages: false,
        run: { invocation in
            var command = try TopCommand(invocation)
            try command.run()
        })
}

/// `scenectl top`: one connection for the queries, one (on a thread of its own) for Monitor.
struct TopCommand {
    let invocation: Invocation
    let delay: UInt64
    var screen = TopScreen()

    static let minimumRefresh: UInt64 = 250_000
    /// How many logged events are looked through for recent reclaim actions at the start.
    static let history: Int64 = 500

    init(_ invocation: Invocation) throws {
        self.invocation = invocation
        var delay: UInt64 = 2_000_000
        if let text = invocation.options.value("delay") {
            guard let span = TimeSpan(parsing: text), span.microseconds >= 100_000 else {
                throw ControlError.usage("invalid --delay '\(text)'; expected a time span of at least 100ms, such as 1s")
            }
            delay = UInt64(span.microseconds)
        }
        self.delay = delay
        if let text = invocation.options.value("order") {
            guard let order = TopScreen.Order(rawValue: text) else {
                throw ControlError.usage("invalid --order '\(text)'; expected one of: "
                                         + TopScreen.Order.allCases.map(\.rawValue).joined(separator: ", "))
            }
            screen.order = order
        }
    }

    mutating func run() throws {
        let queries = try invocation.openConnection(timeout: Invocation.replyTimeout)
        try refresh(queries)
        let context = invocation.context
        let since = max(1, (screen.status.integer("nextSeq") ?? 1) - Self.history)
        guard context.stdoutIsTerminal else {
            // One screen, as top -b -n 1 prints one, with the reclaim actions logged recently.
            // On a connection of its own: stopping a stream early closes the connection.
            try replay(invocation.openConnection(timeout: Invocation.replyTimeout), since: since,
                       through: (screen.status.integer("nextSeq") ?? 1) - 1)
            let lines = screen.render(width: 80, height: 24, time: invocation.time, now: context.now())
            try invocation.write(lines.joined(separator: "\n") + "\n")
            return
        }
        let stream = try MonitorFeed.start(invocation.openConnection(timeout: nil), since: since)
        let terminal = TopTerminal()
        terminal.enter()
        defer { terminal.restore() }
        var lastRefresh = Self.monotonicNow()
        var dirty = false
        var redraw = true
        var size = TopTerminal.size()
        while true {
            if redraw {
                terminal.draw(screen.render(width: size.width, height: size.height, time: invocation.time, now: context.now()))
                redraw = false
            }
            var force = false
            if let key = terminal.key(waitingMilliseconds: 100) {
                switch key {
                case UInt8(ascii: "q"), UInt8(ascii: "Q"), 3, 4: return
                case UInt8(ascii: "f"): screen.order = .footprint
                case UInt8(ascii: "s"): screen.order = .state
                case UInt8(ascii: "n"): screen.order = .name
                case UInt8(ascii: "a"): screen.order = .activity
                case UInt8(ascii: "r"): screen.reversed.toggle()
                case UInt8(ascii: " "), 12: force = true
                default: break
                }
                redraw = true
            }
            let (events, ended) = stream.take()
            for event in events { screen.note(event) }
            if !events.isEmpty { dirty = true; redraw = true }
            if let ended, screen.problem == nil { screen.problem = ended; redraw = true }
            let now = Self.monotonicNow()
            if force || now - lastRefresh >= delay || (dirty && now - lastRefresh >= Self.minimumRefresh) {
                do {
                    try refresh(queries)
                    if ended == nil { screen.problem = nil }
                } catch {
                    screen.problem = "refresh failed: \(error)"
                }
                lastRefresh = now
                dirty = false
                redraw = true
            }
            let current = TopTerminal.size()
            if current != size { size = current; redraw = true }
        }
    }

    /// The logged events from `since` up to `last`, for their reclaim actions; nothing when the
    /// log no longer reaches back that far.
    mutating func replay(_ connection: ManagerTransport, since: Int64, through last: Int64) throws {
        guard last >= since else { return }
        var seen: [JSONObject] = []
        do {
            try connection.callMore(ErrorReport.interface + ".Monitor", ["since": .int(since)]) { reply in
                guard let event = reply.object("event") else { return true }
                seen.append(event)
                return (event.integer("seq") ?? last) < last
            }
        } catch let error as VarlinkError where error.name == ErrorReport.interface + ".EventsUnavailable" {
            return
        }
        for event in seen { screen.note(event) }
    }

    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
    }

    mutating func refresh(_ connection: ManagerTransport) throws {
        func call(_ method: String) throws -> JSONObject {
            try connection.call(ErrorReport.interface + "." + method, [:])
        }
        screen.status = try call("GetStatus").object("status") ?? [:]
        screen.pressure = try call("GetPressure").object("pressure") ?? [:]
        screen.apps = try call("ListApps").objects("apps")
        var sessions: [JSONObject] = []
        try connection.callMore(ErrorReport.interface + ".ListSessions", [:]) { batch in
            sessions += batch.objects("sessions")
            return true
        }
        screen.sessions = sessions
    }
}
