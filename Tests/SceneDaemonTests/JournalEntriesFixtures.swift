import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore
import SystemdKit

// Shared by JournalEntriesTests and JournalLoggerTests.

let mail = AppID("com.example.mail")!
let maps = AppID("com.example.maps")!
let notes = AppID("com.example.notes")!

/// A real engine driven by commands on a virtual clock; each command's events come back.
struct Driver {
    var engine = LifecycleEngine()
    var now = Timestamp(microseconds: 1_700_000_000_000_000)

    @discardableResult
    mutating func run(_ command: Command) throws -> [LifecycleEvent] {
        var effects: [Effect] = []
        try engine.handle(command, now: now, effects: &effects)
        return effects.compactMap { if case .event(let e) = $0 { e } else { nil } }
    }

    mutating func connect(_ app: AppID, background: Bool = false) throws -> (SessionID, [LifecycleEvent]) {
        var effects: [Effect] = []
        let result = try engine.handle(.connect(ConnectRequest(app: app, background: background)), now: now, effects: &effects)
        guard case .session(let id) = result else { throw TestFailure("connect returned \(result)") }
        return (id, effects.compactMap { if case .event(let e) = $0 { e } else { nil } })
    }

    mutating func advance(seconds: Int64) { now = now + .seconds(seconds) }
}

func entries(_ events: [LifecycleEvent], pressure: PressureLevel = .normal) -> [LogEntry] {
    JournalEntries.entries(for: events, pressure: pressure)
}

let reclaimNote = ReclaimNote(level: "warning", usageBefore: 9 << 30, usageAfter: 7 << 30, budget: 8 << 30,
                                      score: 0.25, reason: "oldest background scene, restore cost 500 ms")

/// Every MessageID constant, as the source declares them (so that a new one cannot escape the
/// checks below by not being listed here).
func declaredMessageIDs() throws -> [(name: String, value: String)] {
    let text = try readExistingTextFile(repositoryRoot + "/Sources/SceneDaemon/JournalEntries.swift")
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    guard let start = lines.firstIndex(where: { $0.hasPrefix("enum MessageID {") }),
          let end = lines[start...].firstIndex(where: { $0 == "}" }) else {
        throw TestFailure("no enum MessageID in JournalEntries.swift")
    }
    var out: [(String, String)] = []
    for line in lines[(start + 1)..<end] {
        let words = line.split(separator: " ")
        guard words.count >= 5, words[0] == "static", words[1] == "let", words[3] == "=" else { continue }
        out.append((String(words[2]), String(words[4].dropFirst().dropLast())))
    }
    return out
}
