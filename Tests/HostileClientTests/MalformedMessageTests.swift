import Glibc
import SceneCore
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// Garbage and malformed calls: the daemon must survive every one, answer or close the
    /// connection after saying why (never hang it, never close it silently), and serve others.
    @Suite("Malformed messages")
    struct Malformed {
        static func text(_ json: String) -> [UInt8] { Array(json.utf8) + [0] }

        /// Each case, NUL-terminated, with a name for the failure message.
        static let cases: [(String, [UInt8])] = {
            var cases: [(String, [UInt8])] = [
                ("an empty object", text("{}")),
                ("an empty method", text(#"{"method":""}"#)),
                ("a number as method", text(#"{"method":5}"#)),
                ("a null method", text(#"{"method":null}"#)),
                ("parameters as an array", text(#"{"method":"io.scened.Manager.GetStatus","parameters":[]}"#)),
                ("parameters as a string", text(#"{"method":"io.scened.Manager.GetStatus","parameters":"x"}"#)),
                ("oneway as a string", text(#"{"method":"io.scened.Manager.GetStatus","oneway":"yes"}"#)),
                ("more as a number", text(#"{"method":"io.scened.Manager.GetStatus","more":1}"#)),
                ("oneway and more", text(#"{"method":"io.scened.Manager.GetStatus","oneway":true,"more":true}"#)),
                ("upgrade", text(#"{"method":"io.scened.Manager.GetStatus","upgrade":true}"#)),
                ("an unknown parameter", text(#"{"method":"io.scened.Manager.GetStatus","parameters":{"x":1}}"#)),
                ("nesting 200 deep", text(String(repeating: "[", count: 200) + String(repeating: "]", count: 200))),
                ("100,000 open brackets", text(String(repeating: "[", count: 100_000))),
                ("a 100 KiB app id", text(#"{"method":"io.scened.Manager.Connect","parameters":{"app":""# + String(repeating: "a", count: 100 << 10) + #""}}"#)),
                ("a duplicate key", text(#"{"method":"a.b.C","method":"io.scened.Manager.GetStatus"}"#)),
                ("an infinite number", text(#"{"method":"io.scened.Manager.Monitor","parameters":{"since":1e999},"more":true}"#)),
                ("a negative since", text(#"{"method":"io.scened.Manager.Monitor","parameters":{"since":-1},"more":true}"#)),
                ("since past 2^64", text(#"{"method":"io.scened.Manager.Monitor","parameters":{"since":184467440737095516150},"more":true}"#)),
                ("a session id past 2^64", text(#"{"method":"io.scened.Manager.GetSession","parameters":{"session":"s99999999999999999999999"}}"#)),
                ("a negative session id", text(#"{"method":"io.scened.Manager.GetSession","parameters":{"session":"s-1"}}"#)),
                ("an app id with empty labels", text(#"{"method":"io.scened.Manager.Connect","parameters":{"app":"a..b"}}"#)),
                ("a negative footprint", text(#"{"method":"io.scened.Manager.Connect","parameters":{"app":"org.example.x","footprint":-5}}"#)),
                ("a footprint of 1e300", text(#"{"method":"io.scened.Manager.Connect","parameters":{"app":"org.example.x","footprint":1e300}}"#)),
                ("a zero pressure duration", text(#"{"method":"io.scened.Manager.SetPressure","parameters":{"level":"critical","duration":0}}"#)),
                ("bad base64", text(#"{"method":"io.scened.Manager.SaveState","parameters":{"session":"s1","restoration":{"base64":"!!!"}}}"#)),
                ("json and base64", text(#"{"method":"io.scened.Manager.SaveState","parameters":{"session":"s1","restoration":{"json":1,"base64":"AA=="}}}"#)),
                ("numbers as app ids", text(#"{"method":"io.scened.Manager.MemoryWarning","parameters":{"apps":[1,2,3]}}"#)),
                ("an empty interface", text(#"{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":""}}"#)),
                ("an escaped NUL in a string", text(#"{"method":"io.scened.Manager.GetApp","parameters":{"app":"\u0000"}}"#)),
                ("a lone surrogate", text(#"{"method":"io.scened.Manager.GetApp","parameters":{"app":"\ud800"}}"#)),
                ("an overlong UTF-8 NUL", Array(#"{"method":"io.scened.Manager.GetApp","parameters":{"app":""#.utf8) + [0xC0, 0x80] + Array(#""}}"#.utf8) + [0]),
                ("a byte-order mark", [0xEF, 0xBB, 0xBF] + text(#"{"method":"io.scened.Manager.GetStatus"}"#)),
                ("only spaces", text("   ")),
                ("an empty message", [0]),
                ("1,000 empty messages", [UInt8](repeating: 0, count: 1000)),
                ("trailing garbage", text(#"{"method":"io.scened.Manager.GetStatus"} trailing"#)),
                ("a 10 KiB method name", text(#"{"method":"io.scened.Manager."# + String(repeating: "X", count: 10 << 10) + #""}"#)),
                ("a raw tab in a string", text("{\"method\":\"io.scened.Manager.GetApp\",\"parameters\":{\"app\":\"a\tb\"}}")),
                ("userInfo 127 deep", text(#"{"method":"io.scened.Manager.Connect","parameters":{"app":"org.example.deep","background":true,"userInfo":"#
                                          + String(repeating: #"{"a":"#, count: 125) + "1" + String(repeating: "}", count: 125) + "}}")),
                ("a call after a oneway error", text(#"{"method":"io.scened.Manager.Activate","parameters":{"session":"s404"},"oneway":true}"#)),
            ]
            var rng = SplitMix64(seed: 0x5CE7E)
            for index in 0..<12 {
                let bytes = (0..<(1 + rng.below(2000))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                cases.append(("random bytes #\(index)", bytes + [0]))
            }
            return cases
        }()

        @Test("52 malformed or hostile messages: each answered or closed after an error, the daemon alive and serving throughout")
        func garbageNeverCrashes() throws {
            let daemon = try DaemonProcess.hostile()
            let bystander = try Bystander(daemon)
            let probe = framed("GetStatus")
            for (index, (name, bytes)) in Self.cases.enumerated() {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 3)
                // The daemon may close as soon as it has read the bad part.
                try? raw.send(bytes + probe, timeout: 3)
                if name.hasPrefix("random") && index % 2 == 0 {
                    raw.close()
                } else {
                    do {
                        if try raw.receiveMessage(timeout: 5) == nil {
                            Issue.record("\(name): the connection was closed without a word")
                        }
                    } catch {
                        Issue.record("\(name): neither an answer nor a close within 5 s")
                    }
                }
                guard daemon.child.isRunning else {
                    throw TestFailure("\(name) killed the daemon (\(daemon.child.outcome)); stderr:\n\(daemon.stderrTail())")
                }
                if index % 10 == 9 { try bystander.calls(2, within: 3, "after \(name)") }
            }
            let cpu = try daemon.cpuPercent(over: 1)
            #expect(cpu < 20, "the daemon used \(Int(cpu)) % of a CPU after the malformed messages")
            try bystander.calls(20, within: 5, "after the malformed messages")
            try daemon.assertServing("after the malformed messages")
        }
    }
}
