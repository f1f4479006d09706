import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// io.scened.App at scale: a thousand app processes' attach streams on one daemon (the streams
/// are this process's connections, read in one poll loop), each living a scene's life into the
/// background and answering its didEnterBackground.
@Suite("A thousand attached apps")
struct ThousandAppsTests {
    static let count = 1000

    @Test("1,000 attached apps each get a session and a background transition and answer didEnterBackground: each receives exactly its own events, in commit order, none is terminated as hung")
    func thousandAttachedApps() throws {
        // A thousand attach streams plus the calls' connections exceed the per-user default
        // (1,024, and the tests run as one uid): the limits are raised for the test.
        let workspace = try Workspace(configuration: """
            [Lifecycle]
            SuspendDelaySec=60s
            DidEnterBackgroundTimeoutSec=3s
            [Store]
            Durability=normal
            [Pressure]
            MemoryBudget=1T
            [Limits]
            MaxConnections=4096
            MaxConnectionsPerUser=2048
            """)
        let daemon = try DaemonProcess(workspace)
        let apps = (0..<Self.count).map { "com.example.fleet\($0)" }
        let fleet = try AppFleet(daemon, apps: apps)
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let rssIdle = Self.residentKiB(daemon, "VmRSS")
        let cpuStart = try daemon.cpuTicks()
        let start = monotonicSeconds()

        // 1. Every process attaches: launched, didFinishLaunching first.
        try fleet.attachAll()
        try fleet.pump(until: { fleet.received.allSatisfy { !$0.isEmpty } }, seconds: 20, "attaching")
        let attachedAt = monotonicSeconds()
        let rssAttached = Self.residentKiB(daemon, "VmRSS")

        // 2. Each asks for a new scene (RequestSceneSessionActivation), pipelined.
        for i in apps.indices {
            try fleet.send("io.scened.App.RequestSceneSessionActivation", ["app": .string(apps[i])], for: .activation(i))
        }
        try fleet.pump(until: { fleet.callsInFlight == 0 && fleet.received.allSatisfy { $0.count >= 5 } },
                       seconds: 20, "activating")
        let activatedAt = monotonicSeconds()

        // 3. The system sends every scene to the background; each app answers its
        // didEnterBackground as it reads it, on a connection of its calls.
        var deadlines = [Int64](repeating: 0, count: Self.count)
        fleet.onEvent = { i, event in
            guard event["event"]?.stringValue == "didEnterBackground", let seq = event["seq"]?.intValue else { return }
            deadlines[i] = event["deadline"]?.intValue ?? 0
            try fleet.send("io.scened.App.Acknowledge", ["app": .string(apps[i]), "seq": .int(seq)],
                           for: .acknowledge(i, seq: seq))
        }
        for i in apps.indices {
            guard let session = fleet.sessions[i] else { throw TestFailure("\(apps[i]) has no session") }
            try fleet.send("io.scened.Manager.Background", ["session": .string(session)], for: .background(i))
        }
        try fleet.pump(until: { fleet.acknowledged == Self.count && fleet.callsInFlight == 0 }, seconds: 20,
                       "backgrounding and answering")
        let answeredAt = monotonicSeconds()
        let cpuActive = try daemon.cpuTicks()
        let rssLoaded = Self.residentKiB(daemon, "VmRSS")
        fleet.onEvent = nil

        // 4. Past every deadline, nobody is hung: no stream ends, no event is added, every app
        // is still running with its process attached.
        let lastDeadline = deadlines.max() ?? 0
        #expect(deadlines.allSatisfy { $0 > 0 }, "every didEnterBackground carries a deadline")
        let waitUntil = Double(lastDeadline - Self.wallMicroseconds()) / 1e6 + 0.5
        let quiet = Deadline(seconds: max(waitUntil, 0.5))
        let eventsBefore = fleet.received.map(\.count)
        while !quiet.hasPassed { try fleet.pump(milliseconds: 50) }
        #expect(fleet.failures.isEmpty, "\(fleet.failures.prefix(5))")
        #expect(fleet.received.map(\.count) == eventsBefore, "no event after the answers: none was terminated")
        try fleet.send("io.scened.Manager.ListApps", [:], for: .listApps)
        try fleet.pump(until: { fleet.listedApps != nil }, seconds: 10, "listing apps")
        let running = Set((fleet.listedApps ?? []).compactMap { a in
            a["process"]?.stringValue == "running" ? a["id"]?.stringValue : nil
        })
        #expect(running.count == Self.count && running == Set(apps),
                "every app still runs: \(running.count) of \(Self.count); \(String(describing: fleet.listedApps?.first))")

        // 5. Each app got exactly its own events, in commit order, the same as the Monitor's
        // for that app, and nothing else.
        let expected = ["didFinishLaunching", "configurationForConnecting", "willConnectTo", "willEnterForeground",
                        "didBecomeActive", "willResignActive", "didEnterBackground"]
        var byApp: [String: [Int64]] = [:]
        for e in fleet.monitored { byApp[e["app"]?.stringValue ?? "?", default: []].append(e["seq"]?.intValue ?? -1) }
        var wrong: [String] = []
        for i in apps.indices {
            let got = fleet.received[i]
            let seqs = got.map { $0["seq"]?.intValue ?? -1 }
            if got.map({ $0["event"]?.stringValue ?? "?" }) != expected { wrong.append("\(apps[i]): \(got.map { $0["event"] ?? "?" })") }
            if !got.allSatisfy({ $0["app"]?.stringValue == apps[i] }) { wrong.append("\(apps[i]) got another app's event") }
            if !got.dropFirst().allSatisfy({ $0["session"]?.stringValue == fleet.sessions[i] }) {
                wrong.append("\(apps[i]) got another session's event")
            }
            if seqs != seqs.sorted() || Set(seqs).count != seqs.count { wrong.append("\(apps[i]): out of order \(seqs)") }
            if byApp[apps[i]] != seqs { wrong.append("\(apps[i]): \(seqs), the Monitor: \(byApp[apps[i]] ?? [])") }
            if fleet.attached[i]?["app"]?.stringValue != apps[i] { wrong.append("\(apps[i]): attached \(String(describing: fleet.attached[i]))") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) apps differ, first: \(wrong.prefix(3))")
        #expect(fleet.monitored.count == Self.count * expected.count, "the Monitor saw only these apps' events")
        #expect(!fleet.monitored.contains { $0["event"]?.stringValue == "terminated" })

        // Figures (not gated: the machine is shared).
        let cpuEnd = try daemon.cpuTicks()
        let active = answeredAt - start
        let cpuSeconds = Double(cpuActive - cpuStart) / ticksPerSecond
        print("""
            1,000 attached apps: attach \(Self.ms(attachedAt - start)), sessions \(Self.ms(activatedAt - attachedAt)), \
            background + answers \(Self.ms(answeredAt - activatedAt)); \
            daemon CPU \(Self.twoDigits(cpuSeconds)) s over \(Self.twoDigits(active)) s \
            (\(Int((cpuSeconds / active * 100).rounded()))% of one CPU), \
            idle past the deadlines \(Self.twoDigits(Double(cpuEnd - cpuActive) / ticksPerSecond)) s; \
            RSS before attaching \(rssIdle / 1024) MiB, 1,000 attached \(rssAttached / 1024) MiB, \
            with their sessions \(rssLoaded / 1024) MiB, peak \(Self.residentKiB(daemon, "VmHWM") / 1024) MiB (debug build)
            """)
        try daemon.stop()
    }

    static func residentKiB(_ daemon: DaemonProcess, _ field: String) -> Int {
        for line in readTextFile("/proc/\(daemon.pid)/status").split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    static func wallMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    static func twoDigits(_ v: Double) -> String {
        let hundredths = Int((v * 100).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
    }

    static func ms(_ s: Double) -> String { "\(Int((s * 1000).rounded())) ms" }
}
