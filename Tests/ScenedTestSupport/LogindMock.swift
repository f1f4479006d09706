import Glibc

/// A private dbus-daemon with python-dbusmock's logind template on it (python3-dbusmock).
///
/// The template is extended (written to the bus's directory) so that a mock started anew can
/// come up with sessions already in place, as a restarted logind does, and with methods on the
/// mock interface that emit logind's signals and floods of them.
public final class LogindMock {
    public let dir = TemporaryDirectory(prefix: "scened-logind")
    public var socketPath: String { dir.file("bus") }
    public var address: String { "unix:path=\(socketPath)" }
    public private(set) var bus: ChildProcess?
    public private(set) var mock: ChildProcess?
    private var starts = 0

    public static let python = "/usr/bin/python3"
    public static var isInstalled: Bool {
        access("/usr/bin/dbus-daemon", X_OK) == 0 && access("/usr/bin/dbus-send", X_OK) == 0
            && access("/usr/lib/python3/dist-packages/dbusmock/templates/logind.py", R_OK) == 0
    }

    public init() throws {
        guard Self.isInstalled else {
            dir.remove()
            throw TestFailure("dbus-daemon, dbus-send or python3-dbusmock is missing: run packaging/dev-deps")
        }
        _ = try dir.write("bus.conf", """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <listen>unix:path=\(socketPath)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_type="method_return"/>
                <allow send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="signal"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
              </policy>
            </busconfig>
            """)
        _ = try dir.write("scened_logind.py", Self.template)
        try startBus()
    }

    deinit {
        mock?.killNow()
        bus?.killNow()
        dir.remove()
    }

    public func startBus() throws {
        unlink(socketPath)
        starts += 1
        bus = try ChildProcess(["/usr/bin/dbus-daemon", "--config-file=\(dir.file("bus.conf"))", "--nofork", "--nopidfile"],
                               environment: Self.quietEnvironment, directory: dir.path, label: "dbus-daemon-\(starts)")
        guard waitUntil(seconds: 10, { accepts(socketPath) }) else {
            throw TestFailure("dbus-daemon did not listen: \(bus?.stderr ?? "")")
        }
    }

    /// Starts the mock with `sessions` in place: "id:seat:uid:name:active(0/1):locked(0/1)".
    /// dbus-daemon sends READY=1 to NOTIFY_SOCKET when it has one: never to a test's listener
    /// (NotifyTests set the variable process-wide for a moment).
    static let quietEnvironment: [String: String?] = ["NOTIFY_SOCKET": nil]

    public func startMock(sessions: [String] = []) throws {
        starts += 1
        mock = try ChildProcess([Self.python, "-m", "dbusmock", "--template", dir.file("scened_logind.py")],
                                environment: ["DBUS_SYSTEM_BUS_ADDRESS": address,
                                              "SCENED_TEST_SESSIONS": sessions.joined(separator: ","), "NOTIFY_SOCKET": nil],
                                directory: dir.path, label: "dbusmock-\(starts)")
        guard waitUntil(seconds: 15, { (try? nameHasOwner()) == true }) else {
            throw TestFailure("dbusmock did not take org.freedesktop.login1: \(mock?.stderr ?? "")")
        }
    }

    public func killMock() {
        mock?.killNow()
        mock = nil
    }

    public func killBus() {
        bus?.killNow()
        bus = nil
    }

    public func nameHasOwner() throws -> Bool {
        let out = try send(dest: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                           ["string:org.freedesktop.login1"])
        return out.contains("boolean true")
    }

    /// dbus-send with --print-reply; throws on a failed call.
    @discardableResult
    public func send(dest: String = "org.freedesktop.login1", path: String = "/org/freedesktop/login1",
              _ method: String, _ arguments: [String] = []) throws -> String {
        let done = try run(["/usr/bin/dbus-send", "--bus=\(address)", "--print-reply", "--dest=\(dest)", path, method] + arguments,
                           in: dir.path, timeout: 15)
        guard done.status == 0 else { throw TestFailure(done.summary) }
        return done.stdout
    }

    public func session(_ id: String, _ method: String, _ arguments: [String] = []) throws {
        try send(path: "/org/freedesktop/login1/session/\(id)", method, arguments)
    }

    public func mockCall(_ method: String, _ arguments: [String] = []) throws {
        try send("org.freedesktop.DBus.Mock.\(method)", arguments)
    }

    /// ListInhibitors' (what, who, why, mode) rows, as dbus-send prints them, by `who`.
    public func inhibitors(by who: String = "scened") throws -> [String] {
        let out = try send("org.freedesktop.login1.Manager.ListInhibitors")
        // Each struct prints its strings one per line: what, who, why, mode.
        let strings = out.split(separator: "\n").compactMap { line -> String? in
            let t = line.drop(while: { $0 == " " })
            guard t.hasPrefix("string \"") else { return nil }
            return String(t.dropFirst(8).dropLast())
        }
        var whats: [String] = []
        var i = 0
        while i + 3 < strings.count {
            if strings[i + 1] == who { whats.append(strings[i]) }
            i += 4
        }
        return whats.sorted()
    }

    public static let template = """
        import os
        import dbus
        from dbusmock import MOCK_IFACE, mockobject
        from dbusmock.templates.logind import *  # noqa: F401,F403 (the template's methods and names)
        from dbusmock.templates import logind as _logind

        SESSION_IFACE = 'org.freedesktop.login1.Session'

        def load(mock, parameters):
            _logind.load(mock, parameters)
            for spec in filter(None, os.environ.get('SCENED_TEST_SESSIONS', '').split(',')):
                sid, seat, uid, name, active, locked = spec.split(':')
                path = mock.AddSession(sid, seat, dbus.UInt32(int(uid)), name, active == '1')
                if locked == '1':
                    mockobject.objects[path].Set(SESSION_IFACE, 'LockedHint', True)

        @dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='')
        def EmitSessionNew(self, sid):
            self.EmitSignal('org.freedesktop.login1.Manager', 'SessionNew', 'so',
                            [sid, dbus.ObjectPath('/org/freedesktop/login1/session/' + sid)])

        @dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='')
        def EmitSessionRemoved(self, sid):
            self.EmitSignal('org.freedesktop.login1.Manager', 'SessionRemoved', 'so',
                            [sid, dbus.ObjectPath('/org/freedesktop/login1/session/' + sid)])

        @dbus.service.method(MOCK_IFACE, in_signature='sb', out_signature='')
        def EmitPrepare(self, what, start):
            self.EmitSignal('org.freedesktop.login1.Manager', 'PrepareFor' + what, 'b', [start])

        @dbus.service.method(MOCK_IFACE, in_signature='su', out_signature='')
        def FloodLocks(self, sid, count):
            obj = mockobject.objects['/org/freedesktop/login1/session/' + sid]
            for i in range(count):
                obj.EmitSignal(SESSION_IFACE, 'Lock' if i % 2 == 0 else 'Unlock', '', [])

        @dbus.service.method(MOCK_IFACE, in_signature='susb', out_signature='')
        def Flood(self, sid, count, prop, invalidate):
            obj = mockobject.objects['/org/freedesktop/login1/session/' + sid]
            for i in range(count):
                changed = {} if invalidate else {prop: dbus.Boolean(i % 2 == 0)}
                gone = dbus.Array([prop] if invalidate else [], signature='s')
                obj.EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as',
                               [SESSION_IFACE, dbus.Dictionary(changed, signature='sv'), gone])
        """
}

/// Whether something accepts connections on the unix socket at `path` (a socket file exists
/// between dbus-daemon's bind and its listen, when a connect is refused).
private func accepts(_ path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return withUnixAddress(path) { connect(fd, $0, $1) } == 0
}
