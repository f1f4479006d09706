/// The app of the background-work tests, in Python on the standard library only, for
/// `[Launch] ExecStart=`: scened starts it, so its requests must come from its own process.
///
/// It attaches from $SCENED_SOCKET as $SCENED_APP and writes one JSON line per thing that
/// happens to the log file (argv[1]): every reply of its Attach call (`event`), every reply
/// to a request (`reply_to`), the end of its Attach call (`eof`). It does the requests the
/// test writes to the FIFO (argv[2]), one JSON object a line: {"id", "method", "parameters"}
/// (its app is added), or {"id", "close": true} to close its Attach connection and stay.
///
/// It answers as an app should: didEnterBackground at once; willTerminate, then Detach and
/// exit; performBackgroundTask with CompleteBackgroundTask and didReceiveNotification with
/// Acknowledge, `delay` seconds later (argv: delay=S), unless told not to (argv: no-complete,
/// hold=IDENTIFIER for one task, no-ack). When its Attach call ends without a willTerminate (scened killed) it attaches
/// again with `since`, for a minute.
enum WakeAppScript {
    static let text = #"""
    import json, os, select, socket, sys, time
    path, app = os.environ["SCENED_SOCKET"], os.environ["SCENED_APP"]
    log = open(sys.argv[1], "a", buffering=1)
    fifo = os.open(sys.argv[2], os.O_RDWR | os.O_NONBLOCK)
    flags = sys.argv[3:]
    delay = float(next((f[6:] for f in flags if f.startswith("delay=")), "0"))

    def say(**record):
        record["pid"] = os.getpid()
        record["t"] = time.time()
        log.write(json.dumps(record) + "\n")

    class Conn:
        def __init__(self):
            self.s = socket.socket(socket.AF_UNIX)
            self.s.connect(path)
            self.buf = b""
        def send(self, method, params, more=False):
            m = {"method": method, "parameters": dict(params, app=app)}
            if more:
                m["more"] = True
            self.s.sendall(json.dumps(m).encode() + b"\0")
        def messages(self):
            """The complete messages read by one recv; None at the end of the stream."""
            data = self.s.recv(1 << 20)
            if not data:
                return None
            self.buf += data
            parts = self.buf.split(b"\0")
            self.buf = parts.pop()
            return [json.loads(p) for p in parts]
        def call(self, method, params):
            self.send(method, params)
            while True:
                got = self.messages()
                if got is None:
                    return {"error": "eof"}
                if got:
                    return got[0]

    next_seq = None
    def attach():
        for _ in range(300):
            try:
                a, c = Conn(), Conn()
                p = {} if next_seq is None else {"since": next_seq}
                a.send("io.scened.App.Attach", p, more=True)
                first = None
                while not first:
                    first = a.messages()
                    if first is None:
                        raise OSError("closed")
                say(attached=first[0], since=next_seq)
                if "error" in first[0]:
                    raise OSError(first[0]["error"])
                for m in first[1:]:
                    later.append(m)
                return a, c
            except OSError as e:
                say(retry=str(e))
                time.sleep(0.2)
        say(gave_up=True)
        sys.exit(3)

    later = []
    due = []  # (time, method, params)
    a, c = attach()
    fbuf = b""
    closed = False
    while True:
        timeout = 0 if later else max(0.0, min(d[0] for d in due) - time.monotonic()) if due else 1.0
        readers = [fifo] + ([] if closed else [a.s])
        ready, _, _ = select.select(readers, [], [], timeout)
        now = time.monotonic()
        for d in [d for d in due if d[0] <= now]:
            due.remove(d)
            say(reply_to=d[1], reply=c.call("io.scened.App." + d[1], d[2]))
        if fifo in ready:
            fbuf += os.read(fifo, 65536)
            *lines, fbuf = fbuf.split(b"\n")
            for line in lines:
                cmd = json.loads(line)
                if cmd.get("close"):
                    # Said first: scened may kill the process as soon as the connection closes.
                    say(reply_to=cmd["id"], reply={"parameters": {"closing": True}})
                    a.s.close()
                    closed = True
                    continue
                say(reply_to=cmd["id"], reply=c.call("io.scened.App." + cmd["method"], cmd.get("parameters", {})))
        if closed or (a.s not in ready and not later):
            continue
        msgs = a.messages() if a.s in ready else []
        got = later + ([None] if msgs is None else msgs)
        later = []
        for m in got:
            if m is None:
                say(eof=True)
                a, c = attach()
                break
            e = m.get("parameters", {}).get("event")
            if e is None:
                say(other=m)
                continue
            say(event=e)
            next_seq = e["seq"] + 1
            name = e["event"]
            if name == "didEnterBackground":
                say(reply_to="ack", reply=c.call("io.scened.App.Acknowledge", {"seq": e["seq"]}))
            elif name == "willTerminate":
                say(reply_to="ack", reply=c.call("io.scened.App.Acknowledge", {"seq": e["seq"]}))
                say(reply_to="detach", reply=c.call("io.scened.App.Detach", {}))
                sys.exit(0)
            elif name == "performBackgroundTask" and "no-complete" not in flags and "hold=" + e["identifier"] not in flags:
                due.append((time.monotonic() + delay, "CompleteBackgroundTask",
                            {"identifier": e["identifier"], "success": True}))
            elif name == "didReceiveNotification" and "no-ack" not in flags:
                due.append((time.monotonic() + delay, "Acknowledge", {"seq": e["seq"]}))

    """#
}
