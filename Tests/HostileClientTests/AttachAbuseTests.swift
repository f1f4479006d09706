import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// App processes are careless clients: they attach and die at once, never read their
    /// stream, answer what nobody asked. None of it may wedge the daemon, leak an attachment or
    /// cost the others their service.
    @Suite("Careless attached apps")
    struct AttachAbuse {
        static func attach(_ app: String) -> [UInt8] {
            VarlinkCall(method: "io.scened.App.Attach", parameters: ["app": .string(app)], more: true).encoded()
        }

        @Test("300 attaches closed at once (20 apps, in waves): every death carried out, no attachment left, idle and serving after")
        func attachAndDie() throws {
            let daemon = try DaemonProcess.hostile(watchdogUSec: 1_000_000)
            let bystander = try Bystander(daemon)
            try bystander.calls(10, within: 5, "before the attaches")
            for wave in 0..<15 {
                var held: [RawConnection] = []
                for i in 0..<20 {
                    let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 2)
                    try raw.send(Self.attach("com.example.careless\(i)"), timeout: 2)
                    // Half close before any reply, half once attached.
                    if (wave + i) % 2 == 0 { raw.close() } else { held.append(raw) }
                }
                for raw in held {
                    _ = try? raw.receiveMessage(timeout: 5)
                    raw.close()
                }
            }
            // Every app's process was taken for dead: none is running, none is attached.
            let settled = try waitUntil(seconds: 10) {
                let apps = (try daemon.call("ListApps")["apps"]?.arrayValue ?? []).filter {
                    $0["id"]?.stringValue?.hasPrefix("com.example.careless") == true
                }
                return apps.count == 20 && apps.allSatisfy {
                    $0["process"]?.stringValue == "notRunning" && $0["attachedPid"]?.intValue == nil
                }
            }
            let apps = try daemon.call("ListApps")
            #expect(settled, "apps after the abuse: \(apps)")
            try CloseEarly.expectHealthy(daemon, bystander, "after 300 attaches closed at once")
            // A well-behaved process can still attach as any of them.
            let again = try RawConnection(path: daemon.socketPath)
            try again.send(Self.attach("com.example.careless0"))
            #expect(try again.receiveObject(timeout: 5).parametersObject["attached"] != nil)
        }

        @Test("an attached app that never reads its stream is cut off as a slow reader and taken for dead; others keep theirs")
        func neverReads() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxOutputPerConnection=256K"])
            let lazy = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096)
            try lazy.send(Self.attach("com.example.lazy"))
            let reader = try RawConnection(path: daemon.socketPath)
            try reader.send(Self.attach("com.example.reader"))
            _ = try reader.receiveObject(timeout: 5)
            let client = try daemon.client()
            // userInfo of 8 KiB makes every willConnectTo big; 120 sessions pass 256 KiB unread.
            let info: JSONValue = .object(["blob": .string(String(repeating: "x", count: 8 << 10))])
            for i in 0..<120 {
                _ = try client.call("io.scened.App.RequestSceneSessionActivation", ["app": "com.example.lazy", "userInfo": info])
                if i % 10 == 0 {
                    _ = try client.call("io.scened.App.RequestSceneSessionActivation", ["app": "com.example.reader"])
                }
            }
            let dead = try waitUntil(seconds: 10) {
                try daemon.call("GetApp", ["app": "com.example.lazy"])["app"]?["process"]?.stringValue == "notRunning"
            }
            #expect(dead, "the non-reading process was cut off and taken for dead")
            // The reading app got all of its events, in order.
            var seqs: [Int64] = []
            while let bytes = try? reader.receiveMessage(timeout: 1) {
                guard case .object(let o) = try JSONParser.parse(bytes), let e = o.parametersObject["event"]?.objectValue else { continue }
                seqs.append(e["seq"]?.intValue ?? -1)
            }
            #expect(seqs.count == 1 + 12 * 4, "the reader got \(seqs.count) events: didFinishLaunching, then 4 per session")
            #expect(seqs == seqs.sorted())
            #expect(try daemon.call("GetApp", ["app": "com.example.reader"])["app"]?["attachedPid"]?.intValue != nil)
            try daemon.assertServing("after a non-reading attached app")
        }

        @Test("answers nobody asked for, for other apps, and notices that do not exist: clear errors, nothing changed")
        func bogusAnswers() throws {
            let daemon = try DaemonProcess.hostile()
            let attached = try RawConnection(path: daemon.socketPath)
            try attached.send(Self.attach("com.example.honest"))
            _ = try attached.receiveObject(timeout: 5)
            let client = try daemon.client()
            func error(_ method: String, _ p: JSONObject) -> String? {
                do {
                    _ = try client.call("io.scened.App." + method, p)
                    return nil
                } catch let e as VarlinkError {
                    return e.name
                } catch {
                    return "\(error)"
                }
            }
            #expect(error("Acknowledge", ["app": "com.example.honest", "seq": 999_999]) == "io.scened.App.NotAwaiting")
            #expect(error("Acknowledge", ["app": "com.example.other", "seq": 1]) == "io.scened.App.NotAttached")
            #expect(error("AnswerNotice", ["app": "com.example.honest", "notice": 42]) == "io.scened.App.NotAwaiting")
            #expect(error("Detach", ["app": "com.example.nobody"]) == "io.scened.App.NotAttached")
            #expect(error("Acknowledge", ["app": "com.example.honest", "seq": "one"]) == "org.varlink.service.InvalidParameter")
            let other = try client.call("io.scened.Manager.Connect", ["app": "com.example.other", "background": true])
            let session = other["session"]?["id"]?.stringValue ?? "?"
            #expect(error("RequestSceneSessionDestruction", ["app": "com.example.honest", "session": .string(session)])
                    == "io.scened.App.NotOwnSession")
            #expect(try daemon.call("GetSession", ["session": .string(session)])["session"]?["condition"]?.stringValue == "live")
            #expect(try daemon.call("GetApp", ["app": "com.example.honest"])["app"]?["process"]?.stringValue == "running")
        }
    }
}
