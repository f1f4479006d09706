import Glibc
import ScenedTestSupport
import SystemdKit
import Testing

extension ProcessGlobalStateTests {
    @Suite struct NotifyTests {
        @Test func sendsTheStateAsOneDatagram() throws {
            let listener = try NotifyListener()
            defer { listener.close() }
            try withEnvironment(["NOTIFY_SOCKET": listener.path]) {
                #expect(ServiceManager.notify("READY=1\nSTATUS=x") > 0)
                let message = try #require(listener.receive())
                #expect(message.text == "READY=1\nSTATUS=x")
                #expect(message.fds.isEmpty)
                #expect(getenv("NOTIFY_SOCKET") != nil)
            }
        }

        @Test func returnsZeroWhenNotRunBySystemd() {
            withEnvironment(["NOTIFY_SOCKET": nil]) {
                #expect(ServiceManager.notify("READY=1") == 0)
            }
        }

        @Test func canUnsetTheEnvironment() throws {
            let listener = try NotifyListener()
            defer { listener.close() }
            withEnvironment(["NOTIFY_SOCKET": listener.path]) {
                #expect(ServiceManager.notify("STOPPING=1", unsetEnvironment: true) > 0)
                #expect(getenv("NOTIFY_SOCKET") == nil)
                #expect(listener.receive()?.text == "STOPPING=1")
            }
        }

        @Test func reportsAnUnreachableSocket() {
            withEnvironment(["NOTIFY_SOCKET": "/nonexistent-systemdkit-dir/notify"]) {
                #expect(ServiceManager.notify("READY=1") == -ENOENT)
            }
        }

        @Test func passesFileDescriptorsForTheFDStore() throws {
            let listener = try NotifyListener()
            defer { listener.close() }
            var fds: [Int32] = [-1, -1]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            try withEnvironment(["NOTIFY_SOCKET": listener.path]) {
                #expect(ServiceManager.notify("FDSTORE=1\nFDNAME=state", fds: [fds[0]]) > 0)
                let message = try #require(listener.receive())
                #expect(message.text == "FDSTORE=1\nFDNAME=state")
                try #require(message.fds.count == 1)
                defer { close(message.fds[0]) }
                // A duplicate of the same pipe: same inode, different number.
                var original = stat(), received = stat()
                fstat(fds[0], &original)
                fstat(message.fds[0], &received)
                #expect(received.st_ino == original.st_ino)
                #expect(message.fds[0] != fds[0])
            }
        }
    }

    @Suite struct WatchdogTests {
        @Test func intervalComesFromTheEnvironment() {
            withEnvironment(["WATCHDOG_USEC": "200000", "WATCHDOG_PID": String(getpid())]) {
                #expect(ServiceManager.watchdogInterval() == 200_000)
            }
            withEnvironment(["WATCHDOG_USEC": "200000", "WATCHDOG_PID": nil]) {
                #expect(ServiceManager.watchdogInterval() == 200_000)
            }
            // Meant for another process (e.g. inherited from a parent).
            withEnvironment(["WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"]) {
                #expect(ServiceManager.watchdogInterval() == nil)
            }
            withEnvironment(["WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]) {
                #expect(ServiceManager.watchdogInterval() == nil)
            }
        }

        @Test func runningLoopSendsWatchdogPings() throws {
            let listener = try NotifyListener()
            defer { listener.close() }
            try withEnvironment([
                "NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": String(getpid()),
            ]) {
                let loop = try EventLoop()
                #expect(loop.enableWatchdog())
                try loop.addTimer(at: Clock.monotonic.now() + 450_000, accuracy: 1) { [unowned loop] in
                    loop.exit(code: 0)
                }
                #expect(try loop.run() == 0)
            }
            var pings = 0
            while let message = listener.receive(timeoutMS: 0) {
                #expect(message.text == "WATCHDOG=1")
                pings += 1
            }
            // One at once, then every 1/2..3/4 of the interval: at least 3 in 450 ms.
            #expect(pings >= 3)
            #expect(pings <= 6)
        }

        @Test func noPingsWhenTheWatchdogIsForAnotherProcess() throws {
            let listener = try NotifyListener()
            defer { listener.close() }
            try withEnvironment(["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"]) {
                let loop = try EventLoop()
                #expect(loop.enableWatchdog() == false)
                try loop.addTimer(at: Clock.monotonic.now() + 150_000, accuracy: 1) { [unowned loop] in
                    loop.exit(code: 0)
                }
                #expect(try loop.run() == 0)
            }
            #expect(listener.receive(timeoutMS: 0) == nil)
        }
    }
}
