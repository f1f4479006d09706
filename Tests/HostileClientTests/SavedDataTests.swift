import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// What apps may save is bounded (MaxUserInfoSize, MaxRestorationSize, MaxSessionsPerApp),
    /// and listing never carries it, so that no app's data can break `scenectl list` for others.
    @Suite("Saved data and listings")
    struct SavedData {
        /// A userInfo (or restoration json) object of about `size` bytes.
        static func blob(_ size: Int) -> JSONValue { .object(["blob": .string(String(repeating: "x", count: size))]) }

        /// Base64 of `size` zero bytes ("AAAA" is three of them).
        static func zeros(base64Of size: Int) -> JSONValue { .string(String(repeating: "A", count: size / 3 * 4)) }

        static func call(_ raw: RawConnection, _ method: String, _ parameters: JSONObject) throws -> JSONObject {
            try raw.sendCall(manager + method, parameters)
            return try raw.receiveObject(timeout: 10)
        }

        @Test("userInfo over MaxUserInfoSize, restoration over MaxRestorationSize, a session over MaxSessionsPerApp: LimitExceeded, nothing changed, the connection stays")
        func oversizedDataRefused() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxSessionsPerApp=5"])
            let raw = try RawConnection(path: daemon.socketPath)
            let app = "org.example.big"
            let before = try daemon.status()

            let big = try Self.call(raw, "Connect", ["app": .string(app), "userInfo": Self.blob(100 << 10)])
            expectLimitExceeded(big, limit: "MaxUserInfoSize", maximum: 64 << 10, "Connect with 100 KiB of userInfo")
            let afterRefusal = try daemon.status()
            #expect(afterRefusal["nextSeq"] == before["nextSeq"] && afterRefusal["apps"] == before["apps"]
                    && afterRefusal["sessions"] == before["sessions"], "a refused Connect changed something: \(afterRefusal)")

            // The same connection goes on.
            let made = try Self.call(raw, "Connect", ["app": .string(app), "background": true, "userInfo": Self.blob(32 << 10)])
            let session = made.parametersObject["session"]?["id"]?.stringValue ?? "?"
            #expect(made.errorName == nil, "Connect with 32 KiB of userInfo: \(describe(made))")
            let tooMuch = try Self.call(raw, "SaveUserInfo", ["session": .string(session), "userInfo": Self.blob(100 << 10)])
            expectLimitExceeded(tooMuch, limit: "MaxUserInfoSize", maximum: 64 << 10, "SaveUserInfo with 100 KiB")
            let small = try Self.call(raw, "SaveState", ["session": .string(session), "restoration": ["json": ["page": 3]]])
            #expect(small.errorName == nil, "SaveState with a small restoration: \(describe(small))")
            let bytes = try Self.call(raw, "SaveState", ["session": .string(session), "restoration": ["base64": Self.zeros(base64Of: 700 << 10)]])
            expectLimitExceeded(bytes, limit: "MaxRestorationSize", maximum: 512 << 10, "SaveState with 700 KiB of bytes")
            let json = try Self.call(raw, "SaveState", ["session": .string(session), "restoration": ["json": Self.blob(600 << 10)]])
            expectLimitExceeded(json, limit: "MaxRestorationSize", maximum: 512 << 10, "SaveState with 600 KiB of JSON")
            let kept = try Self.call(raw, "GetSession", ["session": .string(session)]).parametersObject["session"]
            #expect(kept?["userInfo"]?["blob"]?.stringValue?.count == 32 << 10, "the refused SaveUserInfo changed userInfo")
            #expect(kept?["restoration"]?["json"]?["page"]?.intValue == 3, "a refused SaveState changed the restoration: \(kept?["restoration"] ?? .null)")

            // MaxSessionsPerApp=5: four more, then a refusal; another app is not concerned.
            for index in 2...5 {
                let more = try Self.call(raw, "Connect", ["app": .string(app), "background": true])
                #expect(more.errorName == nil, "session \(index) of \(app): \(describe(more))")
            }
            let sixthBefore = try daemon.status()
            let sixth = try Self.call(raw, "Connect", ["app": .string(app), "background": true])
            expectLimitExceeded(sixth, limit: "MaxSessionsPerApp", maximum: 5, "the 6th session of one app")
            let sixthAfter = try daemon.status()
            #expect(sixthAfter["nextSeq"] == sixthBefore["nextSeq"] && sixthAfter["sessions"] == sixthBefore["sessions"],
                    "the refused 6th Connect changed something")
            let other = try Self.call(raw, "Connect", ["app": "org.example.other", "background": true])
            #expect(other.errorName == nil, "another app's first session: \(describe(other))")
            try daemon.assertServing("after refused saves")
        }

        @Test("24 sessions with 900 KiB of userInfo and 300 KiB of restoration each: listings work for everyone, bounded, without them")
        func listingsSurviveHoarders() throws {
            try Binaries.require(Binaries.scenectl)
            let daemon = try DaemonProcess.hostile(limits: ["MaxUserInfoSize=960K"])
            let raw = try RawConnection(path: daemon.socketPath)
            let app = "org.example.hoarder"
            var ids: [String] = []
            for index in 0..<24 {
                let made = try Self.call(raw, "Connect", ["app": .string(app), "background": true, "userInfo": Self.blob(900 << 10)])
                guard made.errorName == nil, let id = made.parametersObject["session"]?["id"]?.stringValue else {
                    throw TestFailure("Connect \(index) with 900 KiB of userInfo (MaxUserInfoSize=960K): \(describe(made))")
                }
                let saved = try Self.call(raw, "SaveState", ["session": .string(id), "restoration": ["base64": Self.zeros(base64Of: 300 << 10)]])
                #expect(saved.errorName == nil, "SaveState of 300 KiB: \(describe(saved))")
                ids.append(id)
            }
            _ = try daemon.call("Connect", ["app": "org.example.modest", "background": true])

            let list = try run([Binaries.scenectl, "--socket", daemon.socketPath, "list"], timeout: 30)
            #expect(list.status == 0, "scenectl list: \(String(list.summary.prefix(800)))")
            #expect(list.stdout.split(separator: "\n").filter { $0.contains(app) }.count == 24, "scenectl list: \(list.stdout.prefix(500))")

            // With more: every reply small, no session carries userInfo or restoration.
            let lister = try RawConnection(path: daemon.socketPath)
            try lister.sendCall(manager + "ListSessions", more: true)
            var listed = 0
            var largest = 0
            while true {
                guard let bytes = try lister.receiveMessage(timeout: 20) else {
                    Issue.record("the daemon closed the ListSessions client after \(listed) sessions")
                    break
                }
                largest = max(largest, bytes.count)
                guard bytes.count <= 512 << 10 else {
                    Issue.record("a ListSessions reply of \(bytes.count >> 10) KiB (the bound is a few hundred KiB)")
                    break
                }
                guard let reply = parseObject(bytes), reply.errorName == nil else {
                    throw TestFailure("ListSessions: \(String(decoding: bytes.prefix(300), as: UTF8.self))")
                }
                for session in reply.parametersObject["sessions"]?.arrayValue ?? [] {
                    listed += 1
                    let carried = ["userInfo", "restoration"].filter { (session[$0] ?? .null) != .null }
                    #expect(carried.isEmpty, "ListSessions carries \(carried) for \(session["id"]?.stringValue ?? "?")")
                }
                if reply["continues"]?.boolValue != true { break }
            }
            #expect(listed == 25, "ListSessions listed \(listed) of 25 sessions (largest reply \(largest >> 10) KiB)")

            // Without more, for the hoarding app: one small reply.
            let filtered = try RawConnection(path: daemon.socketPath)
            try filtered.sendCall(manager + "ListSessions", ["app": .string(app)])
            let single = try filtered.receiveMessage(timeout: 20) ?? []
            #expect(single.count <= 512 << 10, "ListSessions without more: \(single.count >> 10) KiB")
            if single.count <= 512 << 10 {
                let sessions = parseObject(single)?.parametersObject["sessions"]?.arrayValue ?? []
                #expect(sessions.count == 24 && sessions.allSatisfy { ($0["userInfo"] ?? .null) == .null })
            }
            // GetSession still gives them whole.
            let one = try Self.call(raw, "GetSession", ["session": .string(ids[0])]).parametersObject["session"]
            #expect(one?["userInfo"]?["blob"]?.stringValue?.count == 900 << 10, "GetSession lost the userInfo")
            #expect(one?["restoration"]?["base64"]?.stringValue?.count == (300 << 10) / 3 * 4, "GetSession lost the restoration")
            try daemon.assertServing("after listing hoarders")
        }
    }
}
