import Testing
import Varlink
@testable import SceneControl

/// scenectl top without a terminal (one screen) against canned replies, and the screen's layout
/// and orders as plain data.
@Suite struct TopTests {
    static func session(_ id: String, app: String, state: String, footprint: Int64, lastActive: Int64,
                        condition: String = "live") -> JSONValue {
        .object(["id": .string(id), "app": .string(app), "condition": .string(condition), "state": .string(state),
                 "footprint": .int(footprint), "lastActiveAt": .int(lastActive), "protected": false])
    }

    static let sessions: [JSONValue] = [
        session("s1", app: "com.example.mail", state: "foregroundActive", footprint: 200 << 20, lastActive: Fixtures.now - 1_000_000),
        session("s2", app: "com.example.maps", state: "background", footprint: 900 << 20, lastActive: Fixtures.now - 9_000_000),
        session("s10", app: "com.example.mail", state: "unattached", footprint: 50 << 20, lastActive: Fixtures.now - 5_000_000,
                condition: "archived"),
    ]
    static let pressure: JSONObject = ["pressure": [
        "level": "warning", "usage": .int(7 << 30), "budget": .int(8 << 30), "lowWatermark": .int(6 << 30),
        "highWatermark": .int(7 << 30), "criticalWatermark": .int(7 << 30 + 700 << 20), "sources": [],
    ]]
    static let reclaim: JSONObject = ["event": [
        "seq": 1041, "time": .int(Fixtures.now - 2_000_000), "event": "didDisconnect", "app": "com.example.maps", "session": "s7",
        "state": "unattached", "cause": "reclaim",
        "reclaim": ["level": "warning", "usageBefore": .int(7 << 30), "usageAfter": .int(6 << 30), "budget": .int(8 << 30),
                    "reason": "largest idle background scene"],
    ]]
    static let plain: JSONObject = ["event": ["seq": 1040, "time": 0, "event": "didBecomeActive", "app": "com.example.mail",
                                              "session": "s1", "state": "foregroundActive", "cause": "request"]]

    static var replies: [String: [Result<JSONObject, VarlinkError>]] {
        ["GetStatus": [.success(Fixtures.status)], "GetPressure": [.success(pressure)], "ListApps": [.success(Fixtures.apps)],
         "ListSessions": [.success(["sessions": .array(sessions)])],
         "Monitor": [.success([:]), .success(plain), .success(reclaim)]]
    }

    @Test func oneScreenWithoutATerminal() throws {
        let result = ctl(["top"], replies: Self.replies)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.calls.map(\.method) == ["GetStatus", "GetPressure", "ListApps", "ListSessions", "Monitor"].map { "io.scened.Manager." + $0 })
        // Recent history: from 500 events before the next one, stopping at the last logged.
        #expect(result.calls.last?.parameters == ["since": 542] && result.calls.last?.more == true)
        let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        #expect(lines.count == 24 && lines.allSatisfy { $0.count <= 80 }, "\(result.out)")
        #expect(lines[0] == "scened 0.1.0 - up 1:02:00 - 1 client")
        #expect(lines[2] == "Sessions: 10 (7 live, 3 archived): 1 active, 1 background")
        #expect(lines[3].hasPrefix("Pressure: warning  [") && lines[3].hasSuffix("] 7.0G/8.0G 87%"), "\(lines[3])")
        // Clipped at 80 columns.
        #expect(lines.contains("  16:39:59 didDisconnect s7 com.example.maps at warning, 1.0G freed (largest idl"),
                "\(result.out)")
        #expect(!result.out.contains("didBecomeActive"), "only reclaim actions are listed")
        #expect(lines.last == "q:quit f:footprint s:state n:name a:activity r:reverse  [footprint]")
    }

    @Test func gaugeMarksTheWatermarks() {
        var screen = TopScreen()
        screen.pressure = Self.pressure["pressure"]!.objectValue!
        let line = screen.render(width: 80, height: 24, time: TimeFormatter(utc: true), now: testNow)[3]
        let bar = line[line.index(after: line.firstIndex(of: "[")!)..<line.firstIndex(of: "]")!]
        // 7/8 used; marks at 6/8 (low), 7/8 (high) and ~7.7/8 (critical).
        let cells = Array(bar)
        #expect(cells[cells.count * 6 / 8] == "|" && cells[cells.count * 7 / 8] == "|")
        #expect(cells.filter { $0 == "|" }.count == 3)
        #expect(cells.prefix(cells.count * 6 / 8).allSatisfy { $0 == "#" } && cells.last == ".")
    }

    @Test func ordersAndReverse() {
        var screen = TopScreen()
        screen.sessions = Self.sessions.compactMap(\.objectValue)
        let ids = { (s: TopScreen) in s.sortedSessions().compactMap { $0.text("id") } }
        #expect(ids(screen) == ["s2", "s1", "s10"], "footprint, largest first")
        screen.order = .state
        #expect(ids(screen) == ["s1", "s2", "s10"], "foreground, background, archived")
        screen.order = .name
        #expect(ids(screen) == ["s1", "s10", "s2"], "by app, then by number (s10 after s1, not before s2)")
        screen.order = .activity
        #expect(ids(screen) == ["s1", "s10", "s2"], "most recently active first")
        screen.reversed = true
        #expect(ids(screen) == ["s2", "s10", "s1"])
    }

    @Test func longListsEndWithHowManyMore() {
        var screen = TopScreen()
        screen.sessions = (1...40).map { Self.session("s\($0)", app: "com.example.mail", state: "background",
                                                      footprint: Int64($0) << 20, lastActive: 0).objectValue! }
        let lines = screen.render(width: 80, height: 24, time: TimeFormatter(utc: true), now: testNow)
        #expect(lines.count == 24)
        let more = lines.filter { $0.hasPrefix("  ... ") }
        #expect(more.count == 1 && more[0].hasSuffix(" more"), "\(lines.joined(separator: "\n"))")
        let shown = lines.filter { $0.hasPrefix("s") && $0.contains("com.example.mail") }.count
        #expect(more[0] == "  ... \(40 - shown) more")
    }
}
