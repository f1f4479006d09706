import SystemdKit
import Testing
@testable import SceneDaemon

/// Which socket-activated fd scened serves (LISTEN_FDNAMES), and when the load heartbeat
/// extends the start timeout.
@Suite struct SocketActivationTests {
    @Test func theSocketNamedVarlinkIsServedAndTheRestIsNot() throws {
        let metrics = ListenFD(fd: 3, name: "metrics"), varlink = ListenFD(fd: 4, name: "varlink")
        #expect(try SocketActivation.choose([]) == nil, "not socket-activated")
        #expect(try SocketActivation.choose([metrics, varlink]) == .init(listener: varlink, others: [metrics]))
        #expect(try SocketActivation.choose([varlink]) == .init(listener: varlink, others: []))
        let unnamed = ListenFD(fd: 3, name: nil)
        #expect(try SocketActivation.choose([unnamed]) == .init(listener: unnamed, others: []),
                "a lone unnamed socket (a unit without FileDescriptorName=) is still taken")
    }

    @Test func noVarlinkSocketIsRefused() {
        #expect(throws: SocketActivation.ActivationError.self) { try SocketActivation.choose([ListenFD(fd: 3, name: "metrics")]) }
        #expect(throws: SocketActivation.ActivationError.self) {
            try SocketActivation.choose([ListenFD(fd: 3, name: nil), ListenFD(fd: 4, name: nil)])
        }
        #expect(throws: SocketActivation.ActivationError.self) {
            try SocketActivation.choose([ListenFD(fd: 3, name: "varlink"), ListenFD(fd: 4, name: "varlink")])
        }
        do {
            _ = try SocketActivation.choose([ListenFD(fd: 3, name: "a"), ListenFD(fd: 4, name: nil)])
            Issue.record("accepted")
        } catch {
            #expect(error.description == "no socket named 'varlink' among the 2 passed ('a', unnamed); name it with FileDescriptorName=varlink in the socket unit")
        }
    }

    @Test func heartbeatOnlyWhileTheLoadProgresses() {
        let interval: UInt64 = 2_000_000
        let before = LoadHeartbeat.Sample(cpu: 1_000_000, readBytes: 4096)
        #expect(LoadHeartbeat.progressed(from: before, to: .init(cpu: 1_500_000, readBytes: 4096), interval: interval))
        #expect(LoadHeartbeat.progressed(from: before, to: .init(cpu: 1_000_000, readBytes: 8192), interval: interval),
                "reading counts, for a load that waits on the disk")
        #expect(!LoadHeartbeat.progressed(from: before, to: .init(cpu: 1_010_000, readBytes: 4096), interval: interval),
                "a load that hangs gets no more time")
        #expect(LoadHeartbeat.message(interval: interval, elapsed: 12_400_000)
                == "EXTEND_TIMEOUT_USEC=6000000\nSTATUS=Loading the session database (12s)...")
        #expect(LoadHeartbeat.defaultInterval == 2_000_000)
    }
}
