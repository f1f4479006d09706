import Glibc
import ScenedTestSupport
import SystemdKit
import Testing

/// A dbus-daemon of its own on a socket in a temporary directory.
private final class PrivateBus {
    let dir = TemporaryDirectory(prefix: "scened-bus")
    var address: String { "unix:path=\(dir.file("bus"))" }
    private(set) var daemon: ChildProcess?

    init() throws {
        guard access("/usr/bin/dbus-daemon", X_OK) == 0 else {
            dir.remove()
            throw TestFailure("dbus-daemon is missing: run packaging/dev-deps")
        }
        let config = try dir.write("bus.conf", """
            <busconfig>
              <listen>unix:path=\(dir.file("bus"))</listen>
              <auth>EXTERNAL</auth>
              <policy context="default"><allow user="*"/><allow own="*"/>
                <allow send_type="method_call"/><allow send_type="signal"/>
                <allow send_type="method_return"/><allow send_type="error"/>
                <allow receive_type="method_call"/><allow receive_type="signal"/>
                <allow receive_type="method_return"/><allow receive_type="error"/></policy>
            </busconfig>
            """)
        daemon = try ChildProcess(["/usr/bin/dbus-daemon", "--config-file=\(config)", "--nofork", "--nopidfile"],
                                  environment: ["NOTIFY_SOCKET": nil], directory: dir.path, label: "dbus-daemon")
        guard waitUntil(seconds: 10, { accepts(dir.file("bus")) }) else {
            throw TestFailure("dbus-daemon did not listen: \(daemon?.stderr ?? "")")
        }
    }

    func kill() { daemon?.killNow() }

    deinit {
        daemon?.killNow()
        dir.remove()
    }
}

private enum Got {
    case reply(BusReply)
    case signal(BusMessage)
}

private func spin(_ loop: EventLoop, seconds: Double, until done: () -> Bool) throws -> Bool {
    let deadline = Clock.monotonic.now() + UInt64(seconds * 1_000_000)
    while !done() {
        let now = Clock.monotonic.now()
        if now >= deadline { return false }
        try loop.runIteration(timeoutUSec: min(deadline - now, 10_000))
    }
    return true
}

private func driverCall(_ member: String, _ arguments: [BusArgument] = [], interface: String = "org.freedesktop.DBus") -> BusMethodCall {
    BusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: interface,
                  member: member, arguments: arguments)
}

@Suite("BusConnection and BusMessage against a private dbus-daemon", .serialized)
struct BusConnectionTests {
    /// Calls `call` and runs the loop until its reply is posted (at most 5 s).
    private func roundTrip(_ bus: BusConnection, _ loop: EventLoop, _ call: BusMethodCall) throws -> BusReply {
        let inbox = LoopInbox<Got>()
        var got: BusReply?
        inbox.open { if case .reply(let r) = $0 { got = r } }
        try bus.call(call, timeoutUSec: 5_000_000, posting: { .reply($0) }, to: inbox)
        guard try spin(loop, seconds: 5, until: { got != nil }), let got else { throw TestFailure("no reply to \(call.member)") }
        return got
    }

    @Test("replies are read: arrays, basic values, a{sv} with variants skipped or read")
    func replies() throws {
        let server = try PrivateBus()
        let loop = try EventLoop()
        let bus = try BusConnection(.address(server.address), loop: loop)

        let names = try roundTrip(bus, loop, driverCall("ListNames")).get()
        #expect(names.signature == "as")
        let list = try names.readArray("s") { (m) throws(SystemdError) in try m.readString() }
        #expect(list.contains("org.freedesktop.DBus"))
        let me = try #require(bus.uniqueName)
        #expect(list.contains(me))

        let uid = try roundTrip(bus, loop, driverCall("GetConnectionUnixUser", [.string(me)])).get()
        #expect(try uid.readUInt32() == getuid())
        #expect(throws: SystemdError.self) { try uid.readUInt32() }

        let all = try roundTrip(bus, loop, driverCall("GetAll", [.string("org.freedesktop.DBus")],
                                                      interface: "org.freedesktop.DBus.Properties")).get()
        var seen: [String: String] = [:]
        var interfaces: [String] = []
        try all.readProperties { (name, contents, m) throws(SystemdError) in
            seen[name] = contents
            if name == "Interfaces" { interfaces = try m.readArray("s") { (m) throws(SystemdError) in try m.readString() } }
        }
        #expect(seen["Features"] == "as", "unread variants are skipped: \(seen)")
        #expect(interfaces.contains("org.freedesktop.DBus.Monitoring"))
        #expect(all.isAtEnd)
        #expect(bus.liveSlots == 0, "answered calls free their slots")
    }

    @Test("closing from inside a reply's handler, with other calls and matches pending")
    func closeInsideHandler() throws {
        let server = try PrivateBus()
        let loop = try EventLoop()
        var bus: BusConnection? = try BusConnection(.address(server.address), loop: loop)
        let inbox = LoopInbox<Got>()
        var replies = 0
        inbox.open { _ in
            replies += 1
            bus?.close()
            bus = nil
        }
        try bus?.addMatch(.disconnected, posting: { .signal($0) }, to: inbox)
        for _ in 0..<5 { try bus?.call(driverCall("ListNames"), posting: { .reply($0) }, to: inbox) }
        #expect(try spin(loop, seconds: 5) { bus == nil })
        _ = try spin(loop, seconds: 0.3) { false }
        #expect(replies == 1, "nothing posts after close")
    }

    @Test("errors: a missing peer and a refused call come back as BusError")
    func errors() throws {
        let server = try PrivateBus()
        let loop = try EventLoop()
        let bus = try BusConnection(.address(server.address), loop: loop)
        let missing = try roundTrip(bus, loop, BusMethodCall(destination: "org.example.Nobody", path: "/", interface: "org.example.X", member: "Y"))
        guard case .failure(let e) = missing else { throw TestFailure("answered") }
        #expect(e.name == "org.freedesktop.DBus.Error.ServiceUnknown")
        let noOwner = try roundTrip(bus, loop, driverCall("GetNameOwner", [.string("org.example.Nobody")]))
        guard case .failure(let e2) = noOwner else { throw TestFailure("answered") }
        #expect(e2.name == BusError.nameHasNoOwnerName)
        #expect(throws: SystemdError.self) { try BusConnection(.address("unix:path=\(server.dir.file("absent"))"), loop: loop) }
        #expect(throws: SystemdError.self) { try BusConnection(.address("nonsense"), loop: loop) }
        #expect(BusMatchRule(member: "it's") == nil, "a quote is refused, not escaped")
    }

    @Test("signals are posted from matches; close stops them; a killed broker gives Disconnected")
    func signals() throws {
        let server = try PrivateBus()
        let loop = try EventLoop()
        let bus = try BusConnection(.address(server.address), loop: loop)
        let inbox = LoopInbox<Got>()
        var owners: [(String, String, String)] = []
        var disconnected = 0
        inbox.open {
            guard case .signal(let m) = $0 else { return }
            if m.member == "Disconnected" {
                if m.sender == BusMatchRule.localSender { disconnected += 1 }
                return
            }
            if let t = try? (m.readString(), m.readString(), m.readString()) { owners.append(t) }
        }
        try bus.addMatch(BusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                      member: "NameOwnerChanged")!, posting: { .signal($0) }, to: inbox)
        try bus.addMatch(.disconnected, posting: { .signal($0) }, to: inbox)
        _ = try roundTrip(bus, loop, driverCall("ListNames"))  // the matches are installed before this reply

        let other = try BusConnection(.address(server.address), loop: loop)
        #expect(try spin(loop, seconds: 5) { other.uniqueName != nil && owners.contains { $0.2 == other.uniqueName } })
        let otherName = other.uniqueName ?? ""
        other.close()
        #expect(!other.isOpen)
        #expect(try spin(loop, seconds: 5) { owners.contains { $0.0 == otherName && $0.2.isEmpty } })

        server.kill()
        #expect(try spin(loop, seconds: 5) { disconnected == 1 })
        #expect(!bus.isOpen)
        bus.close()
        #expect(bus.liveSlots == 0, "closing frees the matches")
    }
}

/// Whether something accepts connections on the unix socket at `path` (a socket file exists
/// between dbus-daemon's bind and its listen, when a connect is refused).
private func accepts(_ path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return withUnixAddress(path) { connect(fd, $0, $1) } == 0
}
