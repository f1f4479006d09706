/// The files of `LogindBus`: the bus's configuration, the logind template with the bench's
/// session, and the helper that drives the session from its stdin.
extension LogindBus {
    static func busConfig(socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <listen>unix:path=\(socket)</listen>
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
        """
    }

    /// dbusmock's logind with one active, unlocked session on seat0 for BENCH_UID.
    static let template = """
        import os
        import dbus
        from dbusmock.templates.logind import *  # noqa: F401,F403 (BUS_NAME, MAIN_OBJ, … and methods)
        from dbusmock.templates import logind as _base

        def load(mock, parameters):
            _base.load(mock, parameters)
            mock.AddSession(os.environ['BENCH_SESSION'], 'seat0', dbus.UInt32(int(os.environ['BENCH_UID'])),
                            os.environ['BENCH_USER'], True)
        """

    /// One bus connection for the whole run. "lock"/"unlock" call the session's Lock/Unlock
    /// (the mock emits the signal before it replies); "ping" is Peer.Ping to the same name, the
    /// path's round trip without the signal. Answers "ok <µs of the call>".
    static let helper = """
        import sys, time
        import dbus
        bus = dbus.bus.BusConnection(sys.argv[1])
        deadline = time.monotonic() + 15
        while not bus.name_has_owner('org.freedesktop.login1'):
            if time.monotonic() > deadline:
                print('error: org.freedesktop.login1 has no owner', flush=True)
                sys.exit(1)
            time.sleep(0.02)
        obj = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1/session/' + sys.argv[2], introspect=False)
        session = dbus.Interface(obj, 'org.freedesktop.login1.Session')
        peer = dbus.Interface(obj, 'org.freedesktop.DBus.Peer')
        calls = {'lock': session.Lock, 'unlock': session.Unlock, 'ping': peer.Ping}
        print('ready', flush=True)
        for line in sys.stdin:
            call = calls.get(line.strip())
            if call is None:
                print('error: unknown command ' + line.strip(), flush=True)
                continue
            t = time.monotonic()
            try:
                call()
            except dbus.DBusException as e:
                print('error: ' + str(e).replace('\\n', ' '), flush=True)
                continue
            print('ok %d' % int((time.monotonic() - t) * 1e6), flush=True)
        """
}
