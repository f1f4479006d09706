import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// At EMFILE the daemon pauses accepting instead of spinning on a listening socket that
    /// stays readable, keeps serving the clients it has, and resumes once an fd is free.
    @Suite("File descriptor exhaustion")
    struct DescriptorExhaustion {
        @Test("RLIMIT_NOFILE=64: accepting pauses (CPU low, log bounded), connected clients are served, accepting resumes when fds free")
        func acceptPausesAtTheLimit() throws {
            let prlimit = try SystemTools.require("prlimit", for: "starting scened with a low RLIMIT_NOFILE")
            let daemon = try DaemonProcess.hostile(wrapper: [prlimit, "--nofile=64:64", "--"])
            let bystander = try Bystander(daemon)
            var held: [RawConnection] = []
            var pending: RawConnection?
            // Until one is not answered: it waits in the listen backlog for an fd.
            for _ in 0..<80 {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 3)
                try raw.sendCall(manager + "GetStatus")
                let reply = (try? raw.receiveMessage(timeout: 1.5)).flatMap { $0.flatMap(parseObject) }
                guard reply?.parametersObject["status"] != nil else {
                    pending = raw
                    break
                }
                held.append(raw)
            }
            guard let pending else {
                Issue.record("80 connections were all served by a daemon with RLIMIT_NOFILE=64")
                return
            }
            // More clients knock meanwhile.
            var knocking: [RawConnection] = []
            for _ in 0..<10 {
                let raw = try RawConnection(path: daemon.socketPath, connectTimeout: 3)
                try raw.sendCall(manager + "GetStatus")
                knocking.append(raw)
            }
            let logBefore = daemon.logBytes
            let cpu = try daemon.cpuPercent(over: 2)
            let logged = daemon.logBytes - logBefore
            #expect(cpu < 20, "at the fd limit with \(held.count + 1) clients connected, the daemon used \(Int(cpu)) % of a CPU")
            #expect(logged < 16 << 10, "the daemon logged \(logged) bytes in 2 s at the fd limit: \(daemon.stderrTail(300))")

            try bystander.calls(20, within: 5, "at the fd limit")
            for index in Set([0, held.count / 2, held.count - 1]) where held.indices.contains(index) {
                try held[index].sendCall(manager + "GetStatus")
                let reply = try held[index].receiveMessage(timeout: 5).flatMap(parseObject)
                #expect(reply?.parametersObject["status"] != nil, "held connection \(index) at the fd limit: \(reply.map(describe) ?? "closed")")
            }
            // Five fds free: the first client waiting is accepted and answered.
            held.removeLast(min(5, held.count))
            let reply = (try? pending.receiveMessage(timeout: 5)).flatMap { $0.flatMap(parseObject) }
            #expect(reply?.parametersObject["status"] != nil,
                    "the client waiting for an fd, after 5 closed: \(reply.map(describe) ?? "no reply within 5 s")")
            held.removeAll()
            knocking.removeAll()
            try daemon.assertServing("after the fd limit")
        }
    }
}
