import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// MaxConnections (all clients) and MaxConnectionsPerUser (per peer uid): a connection over
    /// a limit is accepted, its first call answered with LimitExceeded, then it is closed; others
    /// keep being served, another uid is not locked out, and closing frees the places.
    @Suite("Connection limits")
    struct ConnectionLimits {
        /// Opens `count` connections that must each be served (GetStatus); stops at the first
        /// that is not, and records it.
        static func hold(_ daemon: DaemonProcess, _ count: Int, _ context: String) throws -> [RawConnection] {
            var held: [RawConnection] = []
            for index in 0..<count {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 3)
                try raw.sendCall(manager + "GetStatus")
                let reply = try raw.receiveMessage(timeout: 5).flatMap(parseObject)
                guard reply?.parametersObject["status"] != nil else {
                    Issue.record("\(context): connection \(index + 1) of \(count) was not served: \(reply.map(describe) ?? "no reply")")
                    break
                }
                held.append(raw)
            }
            return held
        }

        /// `count` more connections, each of which must get LimitExceeded for `limit` to its
        /// first call and then be closed. Stops at the first that does not.
        static func expectRefused(_ daemon: DaemonProcess, _ count: Int, limit: String, maximum: Int64, _ context: String) throws {
            for index in 0..<count {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 3)
                try raw.sendCall(manager + "GetStatus")
                let reply = try raw.receiveMessage(timeout: 5).flatMap(parseObject)
                guard expectLimitExceeded(reply, limit: limit, maximum: maximum, "\(context): connection \(index + 1) over the limit") else { return }
                #expect(try raw.waitForClose(timeout: 3), "\(context): a refused connection stayed open")
            }
        }

        /// A connection is served again soon after some closed.
        static func expectServedAgain(_ daemon: DaemonProcess, _ context: String) throws {
            var last = "nothing"
            let served = try waitUntil(seconds: 5) {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 3)
                try raw.sendCall(manager + "GetStatus")
                let reply = try raw.receiveMessage(timeout: 3).flatMap(parseObject)
                last = reply.map(describe) ?? "no reply"
                return reply?.parametersObject["status"] != nil
            }
            #expect(served, "\(context): no new connection served within 5 s; the last answer: \(last)")
        }

        @Test("MaxConnectionsPerUser=50: root's 51st connection gets LimitExceeded; another uid is served; closing frees places")
        func perUserLimit() throws {
            let user = try TestUser()
            defer { try? user.remove() }
            let daemon = try DaemonProcess.hostile(limits: ["MaxConnectionsPerUser=50", "MaxConnections=200"])
            let scenectl = try shareWithOtherUsers(daemon)
            var held = try Self.hold(daemon, 50, "root's first 50")
            try Self.expectRefused(daemon, 3, limit: "MaxConnectionsPerUser", maximum: 50, "root over its 50")
            for index in [0, 25, 49] where index < held.count {
                try held[index].sendCall(manager + "GetStatus")
                #expect(try held[index].receiveObject(timeout: 5).parametersObject["status"] != nil, "held connection \(index)")
            }
            let other = try user.run([scenectl, "--socket", daemon.socketPath, "status"], timeout: 15)
            #expect(other.status == 0 && other.stdout.contains("scened"), "uid \(user.uid) while root holds 50: \(other.summary)")
            held.removeLast(5)
            try Self.expectServedAgain(daemon, "after root closed 5 of its 50")
            held.removeAll()
            try daemon.assertServing("after the per-user limit")
            try user.remove()
        }

        @Test("MaxConnections=60: the 61st connection gets LimitExceeded, held ones are served, closing frees places")
        func totalLimit() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxConnections=60"])
            var held = try Self.hold(daemon, 60, "the first 60")
            try Self.expectRefused(daemon, 3, limit: "MaxConnections", maximum: 60, "over 60 in all")
            for index in [0, 59] where index < held.count {
                try held[index].sendCall(manager + "GetStatus")
                #expect(try held[index].receiveObject(timeout: 5).parametersObject["status"] != nil, "held connection \(index)")
            }
            held.removeLast(3)
            try Self.expectServedAgain(daemon, "after 3 of 60 closed")
            held.removeAll()
            try daemon.assertServing("after the total limit")
        }

        @Test("defaults: one uid holding 1,100 connections gets LimitExceeded from the 1,025th on; another uid is served")
        func defaultPerUserLimit() throws {
            try raiseOpenFileLimit(to: 4096)
            let user = try TestUser()
            defer { try? user.remove() }
            let daemon = try DaemonProcess.hostile()
            let scenectl = try shareWithOtherUsers(daemon)
            var held = try Self.hold(daemon, 1024, "root's first 1,024")
            try Self.expectRefused(daemon, 76, limit: "MaxConnectionsPerUser", maximum: 1024, "root over 1,024")
            let other = try user.run([scenectl, "--socket", daemon.socketPath, "status"], timeout: 15)
            #expect(other.status == 0 && other.stdout.contains("scened"), "uid \(user.uid) while root holds 1,024: \(other.summary)")
            held.removeAll()
            try Self.expectServedAgain(daemon, "after root closed its connections")
            try user.remove()
        }
    }
}
