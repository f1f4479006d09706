import Glibc
import ScenedTestSupport
import Testing
import Varlink

extension HostileClientTests {
    /// ListSessions with `more` over many sessions: complete and in order for a client that
    /// reads, and for clients that do not (never, slowly, or gone after the first piece) bounded
    /// in memory and CPU while everyone else is served.
    @Suite("Large listings")
    struct LargeListings {
        static let count = 20_000

        /// `count` background sessions over 10 apps, pipelined.
        static func populate(_ daemon: DaemonProcess, count: Int = count) throws {
            let calls = (0..<10).map { framed("Connect", ["app": .string("org.example.list\($0)"), "background": true]) }
            let load = BackgroundLoad.pipeline(socket: daemon.socketPath, calls: calls, window: 256, total: count, seconds: 120)
            let report = load.finish(within: 130)
            guard report.replies == count, report.errorReplies == 0, report.failure == nil else {
                throw TestFailure("creating \(count) sessions: \(report)")
            }
        }

        /// The ids of a whole listing read from `raw`, every reply checked and bounded.
        static func listedIDs(_ raw: RawConnection, timeout: Double = 60) throws -> [UInt64] {
            var ids: [UInt64] = []
            while true {
                guard let bytes = try raw.receiveMessage(timeout: timeout) else {
                    throw TestFailure("the daemon closed the listing after \(ids.count) sessions")
                }
                // Thrown, not expected: background clients call this too.
                guard bytes.count <= 512 << 10 else { throw TestFailure("a listing reply of \(bytes.count >> 10) KiB") }
                guard let reply = parseObject(bytes), reply.errorName == nil else {
                    throw TestFailure("ListSessions: \(String(decoding: bytes.prefix(300), as: UTF8.self))")
                }
                for session in reply.parametersObject["sessions"]?.arrayValue ?? [] {
                    guard let id = session["id"]?.stringValue, id.hasPrefix("s"), let n = UInt64(id.dropFirst()) else {
                        throw TestFailure("a listed session without an id: \(session)")
                    }
                    ids.append(n)
                }
                if reply["continues"]?.boolValue != true { return ids }
            }
        }

        @Test("20,000 sessions listed with more: all of them, once each, in order; filters too; scenectl list prints them all")
        func completeAndInOrder() throws {
            let daemon = try DaemonProcess.hostile()
            try Self.populate(daemon)
            // A few discarded and one changed: gaps in the ids, and the filters see the change.
            for id in ["s5", "s64", "s19999"] { _ = try daemon.call("Discard", ["session": .string(id)]) }
            _ = try daemon.call("Activate", ["session": "s100"])
            let raw = try RawConnection(path: daemon.socketPath)
            try raw.sendCall(manager + "ListSessions", more: true)
            let ids = try Self.listedIDs(raw)
            let expected = (1...UInt64(Self.count)).filter { ![5, 64, 19999].contains($0) }
            #expect(ids.count == expected.count, "listed \(ids.count) of \(expected.count)")
            #expect(ids == expected, "not every session once, in order of id")

            try raw.sendCall(manager + "ListSessions", ["app": "org.example.list3"], more: true)
            let app3 = try Self.listedIDs(raw)
            #expect(app3 == expected.filter { ($0 - 1) % 10 == 3 }, "the app filter: \(app3.prefix(5))…")
            try raw.sendCall(manager + "ListSessions", ["state": "foregroundActive"], more: true)
            #expect(try Self.listedIDs(raw) == [100])
            try raw.sendCall(manager + "ListSessions", ["state": "background", "condition": "live"], more: true)
            #expect(try Self.listedIDs(raw) == expected.filter { $0 != 100 })

            try Binaries.require(Binaries.scenectl)
            let list = try run([Binaries.scenectl, "--socket", daemon.socketPath, "--no-legend", "list"], timeout: 60)
            #expect(list.status == 0, "scenectl list: \(String(list.summary.prefix(800)))")
            let printed = list.stdout.split(separator: "\n").compactMap { UInt64($0.split(separator: " ").first?.dropFirst() ?? "") }
            #expect(printed == expected, "scenectl list printed \(printed.count) of \(expected.count) sessions, or out of order")
            try daemon.assertServing("after large listings")
        }

        @Test("20,000-session listings whose clients never read, read very slowly, or close after the first piece: the bystander is served, memory and CPU bounded")
        func clientsThatDoNotRead() throws {
            let daemon = try DaemonProcess.hostile()
            try Self.populate(daemon)
            let rssBefore = daemon.residentBytes

            // Never read, on tiny receive buffers: each may cost its piece and high-water mark, no more.
            var stalled: [RawConnection] = []
            for _ in 0..<8 {
                let raw = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096)
                try raw.sendCall(manager + "ListSessions", more: true)
                stalled.append(raw)
            }
            // Gone after the first piece, over and over.
            for _ in 0..<20 {
                let raw = try RawConnection(path: daemon.socketPath)
                try raw.sendCall(manager + "ListSessions", more: true)
                _ = try raw.receiveMessage(timeout: 20)
                raw.close()
            }
            #expect(try waitUntil(seconds: 10) { (try daemon.status()["connections"]?.intValue ?? 0) == 8 + 1 },
                    "the closed listers' connections are gone")
            sleepMilliseconds(300)
            let idleCPU = try daemon.cpuPercent(over: 1.5)
            #expect(idleCPU < 30, "the daemon used \(Int(idleCPU)) % of a CPU with 8 listings nobody reads (a busy loop?)")

            // A slow reader (4 KiB every 20 ms) and a bystander meanwhile, its rate against its rate alone.
            let socket = daemon.socketPath
            try HostileClientTests.Floods.expectShare(daemon, floor: 0.10, "listings read 4 KiB at a time") {
                BackgroundLoad { control in
                    do {
                        let slow = try RawConnection(path: socket, receiveBuffer: 4096)
                        try slow.sendCall(manager + "ListSessions", more: true)
                        control.started.update { $0 = true }
                        while !control.shouldStop {
                            guard try slow.fill(waitingMilliseconds: 20, maxBytes: 4096) else {
                                control.fail("the daemon closed the slow lister")
                                return
                            }
                            control.report.update { $0.callsSent = 1 }
                            sleepMilliseconds(20)
                        }
                    } catch {
                        control.fail("\(error)")
                    }
                }
            }

            // Listings read as fast as they come, one after the other: the loop still serves
            // others between pieces.
            let fastFailure = Shared<String?>(nil)
            try HostileClientTests.Floods.expectShare(daemon, floor: 0.10, "whole listings one after the other") {
                BackgroundLoad { control in
                    do {
                        let fast = try RawConnection(path: socket)
                        control.started.update { $0 = true }
                        while !control.shouldStop {
                            try fast.sendCall(manager + "ListSessions", more: true)
                            let listed = try Self.listedIDs(fast, timeout: 20)
                            guard listed.count > Self.count, listed == listed.sorted() else {
                                fastFailure.update { $0 = "a listing of \(listed.count) sessions, in order: \(listed == listed.sorted())" }
                                return
                            }
                            control.report.update { $0.callsSent += 1 }
                        }
                    } catch {
                        fastFailure.update { $0 = "\(error)" }
                    }
                }
            }
            #expect(fastFailure.value == nil, "the lister reading at full speed: \(fastFailure.value ?? "")")

            // A slow reader that then reads on gets the whole listing, in order.
            let slow = try RawConnection(path: daemon.socketPath, receiveBuffer: 4096)
            try slow.sendCall(manager + "ListSessions", more: true)
            for _ in 0..<20 {
                _ = try slow.fill(waitingMilliseconds: 20, maxBytes: 4096)
                sleepMilliseconds(20)
            }
            let slowIDs = try Self.listedIDs(slow)
            let reader = try RawConnection(path: daemon.socketPath)
            try reader.sendCall(manager + "ListSessions", more: true)
            let all = try Self.listedIDs(reader)
            #expect(all.count > Self.count && all == all.sorted())
            #expect(slowIDs == all, "the slow lister got \(slowIDs.count) of \(all.count) sessions, or out of order")

            let peak = daemon.peakResidentBytes
            // The whole listing is ~7 MiB as JSON: 8 listings buffered whole would be far over this.
            #expect(peak - rssBefore < 48 << 20, "RSS went from \(mebibytes(rssBefore)) to a peak of \(mebibytes(peak))")
            for raw in stalled { raw.close() }
            try daemon.assertServing("after listings that were not read")
        }
    }
}
