import Glibc
import ScenedTestSupport
import Varlink

/// What the stop and interruption tests share: the event log read back, a stop timed from the
/// signal to the exit, and apps that do not answer.
enum StopSupport {
    /// Every event from `since` on, read from a Monitor until nothing came for `quiet` seconds.
    static func events(_ daemon: DaemonProcess, since: UInt64, quiet: Double = 0.5) throws -> [ObservedEvent] {
        let monitor = try RawConnection(path: daemon.socketPath)
        defer { monitor.close() }
        try monitor.sendCall("io.scened.Manager.Monitor", ["since": .int(Int64(since))], more: true)
        let first = try monitor.receiveObject(timeout: 10)
        guard first.errorName == nil else { throw TestFailure("Monitor since \(since) failed: \(first)") }
        var out: [ObservedEvent] = []
        if let event = first.parametersObject["event"]?.objectValue { out.append(ObservedEvent(object: event)) }
        // Drained until `quiet` passes with nothing new (bounded: the log is finite).
        var lastNew = monotonicSeconds()
        while monotonicSeconds() - lastNew < quiet {
            let open = try monitor.fill(waitingMilliseconds: 50)
            while let bytes = monitor.bufferedMessage() {
                guard case .object(let reply) = try JSONParser.parse(bytes) else { continue }
                if let event = reply.parametersObject["event"]?.objectValue {
                    out.append(ObservedEvent(object: event))
                    lastNew = monotonicSeconds()
                }
            }
            if !open { break }
        }
        return out
    }

    static func nextSeq(_ daemon: DaemonProcess) throws -> UInt64 {
        guard let next = try daemon.call("GetStatus")["status"]?["nextSeq"]?.intValue else {
            throw TestFailure("GetStatus without nextSeq")
        }
        return UInt64(next)
    }

    /// SIGTERM, then `meanwhile` runs until scened exits (an app answering, say); the seconds
    /// from the signal to the exit. Fails unless the exit is clean and within `bound`.
    static func timedStop(_ daemon: DaemonProcess, bound: Double, meanwhile: () throws -> Void = {}) throws -> Double {
        let start = monotonicSeconds()
        daemon.child.signal(SIGTERM)
        try meanwhile()
        guard daemon.child.wait(seconds: max(bound - (monotonicSeconds() - start), 0.1)) else {
            daemon.child.killNow()
            throw TestFailure("scened did not exit within \(bound) s of SIGTERM; stderr:\n\(daemon.stderr.suffix(3000))")
        }
        let elapsed = monotonicSeconds() - start
        guard daemon.child.exitStatus == 0 else {
            throw TestFailure("scened ended with \(daemon.child.outcome) after SIGTERM; stderr:\n\(daemon.stderr.suffix(3000))")
        }
        return elapsed
    }

    static func waitFor(_ what: String, seconds: Double = 20, _ condition: () throws -> Bool) throws {
        let deadline = Deadline(seconds: seconds)
        while !(try condition()) {
            if deadline.hasPassed { throw TestFailure("not within \(seconds) s: \(what)") }
            usleep(20_000)
        }
    }

    /// Whether the process is gone (or a zombie nobody reaped).
    static func gone(_ pid: Int32) -> Bool {
        access("/proc/\(pid)", F_OK) != 0 || StartedAppTests.stat(pid)?.first == "Z"
    }

    /// An app (for `[Launch] ExecStart=`) that attaches from $SCENED_SOCKET as $SCENED_APP,
    /// ignores SIGTERM and never answers anything: it goes only with SIGKILL.
    static let silentApp = #"""
    import json, os, signal, socket, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    path, app = os.environ["SCENED_SOCKET"], os.environ["SCENED_APP"]
    def call(s, method, params, more=False):
        m = {"method": "io.scened.App." + method, "parameters": dict(params, app=app)}
        if more: m["more"] = True
        s.sendall(json.dumps(m).encode() + b"\0")
    attach = socket.socket(socket.AF_UNIX); attach.connect(path)
    call(attach, "Attach", {}, more=True)
    print("silent app attached", flush=True)
    while attach.recv(65536): pass
    time.sleep(600)
    """#
}
