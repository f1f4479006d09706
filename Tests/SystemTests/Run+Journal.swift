import Foundation
import Glibc
import Testing

extension Run {
    // MARK: - Stage 5: journal entries per session

    mutating func journalPerSession() throws {
        // journald caches a sender's metadata (cgroup, unit, comm) per PID for up to 1 s. With
        // the manager at debug level, the forked child logs "Executing: ..." just before exec,
        // so the daemon's entries of its first second would carry the child's "(scened)" in
        // init.scope. (Not so in production: the manager logs at info, and User=scened changes
        // the uid, which makes journald refresh.) The daemon was just socket-activated: wait.
        let started = UInt64(unit(["ExecMainStartTimestampMonotonic"])["ExecMainStartTimestampMonotonic"] ?? "") ?? 0
        let settled = started + 1_200_000
        if monotonicMicroseconds() < settled { sleepSeconds(Double(settled - monotonicMicroseconds()) / 1e6) }

        let c = try client()
        let appA = "com.example.journal.a"
        let appB = "com.example.journal.b"
        var events: [String: [[[String: Any]]]] = [:] // session -> per call, its events
        var allSeqs: [String: Set<Int>] = [:]
        func record(_ reply: [String: Any]) {
            var perSession: [String: [[String: Any]]] = [:]
            for case let e as [String: Any] in reply["events"] as? [Any] ?? [] {
                guard let s = e["session"] as? String else { continue }
                perSession[s, default: []].append(e)
                allSeqs[s, default: []].insert(e["seq"] as? Int ?? -1)
            }
            for (s, list) in perSession { events[s, default: []].append(list) }
        }
        var reply = try c.call("\(manager).Connect", ["app": appA])
        record(reply)
        let a = (reply["session"] as? [String: Any])?["id"] as? String ?? "?"
        reply = try c.call("\(manager).Connect", ["app": appB, "background": true])
        record(reply)
        let b = (reply["session"] as? [String: Any])?["id"] as? String ?? "?"
        for (method, session) in [("Deactivate", a), ("Activate", b), ("Background", a), ("Background", b),
                                  ("Activate", a), ("Disconnect", b), ("Disconnect", a), ("Activate", a)] {
            record(try c.call("\(manager).\(method)", ["session": session]))
        }
        journalSessions = (a, appA, b)

        for (session, app, other) in [(a, appA, b), (b, appB, a)] {
            let expected = events[session] ?? []
            var entries: [[String: Any]] = []
            waitUntil(seconds: 5, interval: 0.1) {
                entries = ns.journalEntries(["SCENED_SESSION=\(session)"])
                return entries.count >= expected.count
            }
            #expect(entries.count == expected.count,
                    "journalctl SCENED_SESSION=\(session): \(entries.count) entries for \(expected.count) state changes (one entry per change)")
            let otherSeqs = allSeqs[other] ?? []
            for (i, entry) in entries.enumerated() {
                let sessions = journalValues(entry, "SCENED_SESSION")
                #expect(sessions.contains(session), "entry \(i) lacks SCENED_SESSION=\(session): \(entry)")
                #expect(!sessions.contains(other), "entry \(i) of \(session) names the other session \(other): \(entry)")
                let seqs = journalValues(entry, "SCENED_SEQ").compactMap { Int($0) }
                #expect(otherSeqs.isDisjoint(with: seqs), "entry \(i) of \(session) carries \(other)'s events: \(entry)")
                #expect(journalValues(entry, "SYSLOG_IDENTIFIER") == ["scened"]
                            && journalValues(entry, "_SYSTEMD_USER_UNIT") == ["scened.service"]
                            && journalValues(entry, "SCENED_APP") == [app]
                            && journalValues(entry, "PRIORITY") == ["6"]
                            && !(entry["MESSAGE"] as? String ?? "").isEmpty,
                        "entry \(i) of \(session): missing or wrong standard fields: \(entry)")
                guard i < expected.count else { continue }
                // The callbacks of that change, in order (SCENED_EVENTS: the journal does not keep
                // the order of repeated fields), and the state it ended in.
                let names = expected[i].compactMap { $0["event"] as? String }
                #expect(journalValues(entry, "SCENED_EVENTS") == [names.joined(separator: " ")],
                        "entry \(i) of \(session): SCENED_EVENTS \(journalValues(entry, "SCENED_EVENTS")), expected \(names)")
                #expect(Set(journalValues(entry, "SCENED_EVENT")) == Set(names),
                        "entry \(i) of \(session): SCENED_EVENT \(journalValues(entry, "SCENED_EVENT")), expected \(names)")
                #expect(seqs.sorted() == expected[i].compactMap { $0["seq"] as? Int }.sorted(),
                        "entry \(i) of \(session): SCENED_SEQ \(seqs)")
                #expect(journalValues(entry, "SCENED_STATE") == [expected[i].last?["state"] as? String ?? "?"],
                        "entry \(i) of \(session): SCENED_STATE")
            }
            let ids = entries.compactMap { $0["MESSAGE_ID"] as? String }
            #expect(ids.first == ID.connected, "first entry of \(session) should be 'connected': \(ids)")
            if session == a {
                #expect(ids.last == ID.reconnected && ids.contains(ID.disconnected) && ids.contains(ID.stateChanged),
                        "message ids of \(session): \(ids)")
            }
        }
    }

    // MARK: - Stage 6: catalog

    mutating func catalog() throws {
        let (a, app, _) = journalSessions
        try #require(!a.isEmpty, "needs the sessions of the journal stage")
        let shown = ns.journal(["-x", "MESSAGE_ID=\(ID.connected)", "SCENED_SESSION=\(a)"])
        #expect(shown.stdout.contains("Subject: Scene session \(a) of \(app) connected")
                    && shown.stdout.contains("Defined-By: scened"),
                "journalctl -x does not explain the entry with the catalog:\n\(shown)")
        // Every kind of entry scened wrote so far has its catalog entry.
        let used = Set(ns.journalEntries(["SYSLOG_IDENTIFIER=scened"])
            .compactMap { $0["MESSAGE_ID"] as? String })
        let listed = ns.journal(["--list-catalog"]).stdout
        let missing = used.filter { !listed.contains($0) }
        #expect(!used.isEmpty && missing.isEmpty, "MESSAGE_IDs without a catalog entry: \(missing.sorted())")
        report("catalog: \(used.count) kinds of entry logged so far, all explained by journalctl -x")
    }
}
