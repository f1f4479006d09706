import ScenedTestSupport
@testable import SceneDaemon
import SystemdKit

/// A `LogindClient` on its own loop, its news collected as the daemon would get them.
final class LogindHarness {
    let loop: EventLoop
    let inbox = LoopInbox<DaemonInput>()
    let client: LogindClient
    var news: [LoginNews] = []

    init(address: String, followIdle: Bool = false, keepSessionsUSec: UInt64 = 5_000_000) throws {
        loop = try EventLoop()
        var settings = LogindClient.Settings()
        settings.address = .address(address)
        settings.followIdle = followIdle
        settings.callTimeoutUSec = 5_000_000
        settings.keepSessionsUSec = keepSessionsUSec
        client = LogindClient(loop: loop, inbox: inbox, settings: settings)
        inbox.open { [unowned self] input in
            guard case .login(let i) = input else { return }
            news += client.handle(i)
        }
        client.start()
        news += client.takeNews()
    }

    deinit {
        client.stop()
        inbox.close()
    }

    /// Runs the loop until `done()` or `seconds` pass; whether `done()` held.
    @discardableResult
    func spin(seconds: Double, until done: () throws -> Bool = { false }) throws -> Bool {
        let deadline = Clock.monotonic.now() + UInt64(seconds * 1_000_000)
        while true {
            if try done() { return true }
            let now = Clock.monotonic.now()
            if now >= deadline { return false }
            try loop.runIteration(timeoutUSec: min(deadline - now, 10_000))
        }
    }

    func count(_ item: LoginNews) -> Int { news.filter { $0 == item }.count }
    var unavailableCount: Int { news.filter { if case .unavailable = $0 { true } else { false } }.count }
    func verdict(_ uid: UInt32) -> LoginVerdict { client.state.verdict(forUID: uid) }
}
