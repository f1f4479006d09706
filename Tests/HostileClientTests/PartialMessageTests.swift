import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// Clients that start a message and do not finish it: cut after IdleTimeoutSec of silence,
    /// and, when the partial messages of all clients pass MaxBufferedInput, the largest goes.
    @Suite("Partial messages held open")
    struct PartialMessages {
        /// The start of a call whose `pad` string is `size` bytes long, never terminated.
        static func unterminated(_ size: Int) -> [UInt8] {
            Array(#"{"method":"io.scened.Manager.GetStatus","parameters":{"pad":""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: size)
        }

        /// What completes `unterminated`: the call is then whole (and refused for its unknown
        /// parameter, which proves it was read to the end).
        static let terminator = Array(#""}}"#.utf8) + [0]

        @Test("IdleTimeoutSec=1s: half a message then silence is cut with LimitExceeded; idle clients, monitors and slow senders are not")
        func idleTimeout() throws {
            let daemon = try DaemonProcess.hostile(limits: ["IdleTimeoutSec=1s"])
            let stuck = try RawConnection(path: daemon.socketPath)
            try stuck.send(Array(framed("GetStatus").dropLast(12)))
            let silent = try RawConnection(path: daemon.socketPath)
            let between = try RawConnection(path: daemon.socketPath)
            try between.sendCall(manager + "GetStatus")
            _ = try between.receiveObject(timeout: 5)
            let monitor = try RawConnection(path: daemon.socketPath)
            try monitor.sendCall(manager + "Monitor", more: true)
            _ = try monitor.receiveObject(timeout: 5)
            // A slow sender: a byte every 300 ms is never 1 s of silence.
            let slow = try RawConnection(path: daemon.socketPath)
            let slowCall = framed("GetStatus")
            try slow.send(Array(slowCall.prefix(slowCall.count - 10)))
            let started = Deadline(seconds: 3)
            for byte in slowCall.suffix(10) {
                sleepMilliseconds(300)
                try slow.send([byte])
            }
            let slowReply = try slow.receiveObject(timeout: 3)
            #expect(slowReply.parametersObject["status"] != nil, "the slow sender: \(describe(slowReply))")
            #expect(started.hasPassed, "the slow sender took under 3 s")

            // 3 s have passed, three times the timeout.
            let ending = try readUntilClosed([stuck], seconds: 2)[0]
            expectLimitExceeded(ending.last, limit: "IdleTimeoutSec", "the client silent mid-message")
            #expect(ending.closed, "the client silent mid-message for 5 s is still connected")
            #expect(try silent.staysQuiet(milliseconds: 10), "a client that never sent anything was closed or sent something")
            try silent.sendCall(manager + "GetStatus")
            #expect(try silent.receiveObject(timeout: 5).parametersObject["status"] != nil)
            #expect(try between.staysQuiet(milliseconds: 10), "a client idle between calls was closed or sent something")
            try between.sendCall(manager + "GetStatus")
            #expect(try between.receiveObject(timeout: 5).parametersObject["status"] != nil)
            // The monitor still gets events.
            _ = try daemon.call("Connect", ["app": "org.example.late", "background": true])
            let event = try monitor.receiveObject(timeout: 5)
            #expect(event.parametersObject["event"]?["app"]?.stringValue == "org.example.late", "the idle monitor: \(describe(event))")
            try daemon.assertServing("after the idle timeout")
        }

        @Test("MaxBufferedInput=4M: when the partial messages pass it, the largest one's client gets LimitExceeded; the others go on")
        func largestPartialMessageGoes() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxBufferedInput=4M"])
            // 1,000 KiB + 5 × 600 KiB stay under 4 MiB.
            var clients: [RawConnection] = []
            for size in [1000 << 10] + Array(repeating: 600 << 10, count: 5) {
                let raw = try RawConnection(path: daemon.socketPath)
                try raw.send(Self.unterminated(size), timeout: 5)
                clients.append(raw)
                sleepMilliseconds(100)
            }
            for (index, client) in clients.enumerated() {
                #expect(try client.staysQuiet(milliseconds: 100), "client \(index) was answered or closed under the limit")
            }
            // One more 600 KiB passes it: the 1,000 KiB one must go.
            let last = try RawConnection(path: daemon.socketPath)
            try last.send(Self.unterminated(600 << 10), timeout: 5)
            clients.append(last)
            let ending = try readUntilClosed([clients[0]], seconds: 3)[0]
            expectLimitExceeded(ending.last, limit: "MaxBufferedInput", maximum: 4 << 20, "the client with the largest partial message")
            #expect(ending.closed, "the client with the largest partial message is still connected")
            // The others finish their messages and are answered.
            for (index, client) in clients.enumerated().dropFirst() {
                try client.send(Self.terminator, timeout: 5)
                let reply = try client.receiveObject(timeout: 5)
                #expect(reply.errorName == "org.varlink.service.InvalidParameter", "client \(index): \(describe(reply))")
            }
            try daemon.assertServing("after MaxBufferedInput")
        }

        @Test("300 clients each holding 900 KiB of an unterminated message (MaxBufferedInput=16M): RSS bounded, a bystander served")
        func manyPartialMessages() throws {
            let daemon = try DaemonProcess.hostile(limits: ["MaxBufferedInput=16M"])
            let bystander = try Bystander(daemon)
            let payload = Self.unterminated(900 << 10)
            var clients: [RawConnection] = []
            var sent: [Int] = []
            for _ in 0..<300 {
                clients.append(try RawConnection(path: daemon.socketPath, connectTimeout: 3))
                sent.append(0)
            }
            // Round-robin, without ever waiting on one client: the daemon may stop reading any.
            let deadline = Deadline(seconds: 10)
            var gone = Set<Int>()
            while !deadline.hasPassed {
                var progress = false
                for index in clients.indices where sent[index] < payload.count && !gone.contains(index) {
                    guard let n = clients[index].sendSome(payload[sent[index]...]) else {
                        gone.insert(index)
                        continue
                    }
                    sent[index] += n
                    if n > 0 { progress = true }
                }
                if !progress {
                    // Everything is written, or every socket is full: serve the bystander meanwhile.
                    if zip(sent, clients.indices).allSatisfy({ $0.0 == payload.count || gone.contains($0.1) }) { break }
                    try bystander.calls(1, within: 3, "while 300 clients send half messages")
                }
            }
            try bystander.calls(20, within: 5, "with 300 clients holding half messages")
            sleepMilliseconds(200)
            let peak = daemon.peakResidentBytes
            #expect(peak < 128 << 20, "the daemon's RSS peaked at \(mebibytes(peak)) with \(sent.reduce(0, +) >> 20) MiB of half messages sent")
            // Whoever was closed was told why.
            let endings = try readUntilClosed(clients, seconds: 3)
            let silent = endings.enumerated().filter { $0.element.closed && limitExceededProblem($0.element.last, limit: "MaxBufferedInput") != nil }
            #expect(silent.isEmpty, "\(silent.count) clients were closed without LimitExceeded(MaxBufferedInput): \(silent.prefix(3).map { $0.element.last.map(describe) ?? "no reply" })")
            clients.removeAll()
            try bystander.calls(20, within: 5, "after the half messages were dropped")
            try daemon.assertServing("after 300 half messages")
        }
    }
}
