import Glibc
import SystemdKit
import Testing

@Suite struct EventLoopIOTests {
    @Test func dispatchesReadableSocketAndReturnsExitCode() throws {
        let loop = try EventLoop()
        let pair = SocketPair()
        defer { pair.close() }
        try loop.addSafetyTimer()
        var received = ""
        var reported: IOEvents = []
        try loop.addIO(fd: pair.right, events: .readable) { [unowned loop] events in
            reported = events
            received += readAvailable(pair.right)
            loop.exit(code: 7)
        }
        writeString(pair.left, "ping")
        #expect(try loop.run() == 7)
        #expect(received == "ping")
        #expect(reported.contains(.readable))
    }

    @Test func reportsWriteSideReadiness() throws {
        let loop = try EventLoop()
        let pair = SocketPair()
        defer { pair.close() }
        try loop.addSafetyTimer()
        var reported: IOEvents = []
        let source = try loop.addIO(fd: pair.left, events: .writable) { [unowned loop] events in
            reported = events
            loop.exit(code: 0)
        }
        #expect(source.events == .writable)
        #expect(source.fd == pair.left)
        #expect(try loop.run() == 0)
        #expect(reported.contains(.writable))
        #expect(!reported.contains(.readable))
    }

    @Test func setEventsSwitchesFromReadToWrite() throws {
        let loop = try EventLoop()
        let pair = SocketPair()
        defer { pair.close() }
        try loop.addSafetyTimer()
        var seen: [IOEvents] = []
        var source: IOSource?
        source = try loop.addIO(fd: pair.right, events: .readable) { [unowned loop] events in
            seen.append(events.intersection([.readable, .writable]))
            if events.contains(.readable) {
                _ = readAvailable(pair.right)
                // Like a connection that queued a reply: now wait for room to write.
                try? source?.setEvents(.writable)
            } else {
                loop.exit(code: 0)
            }
        }
        writeString(pair.left, "request")
        #expect(try loop.run() == 0)
        #expect(seen == [.readable, .writable])
        #expect(source?.events == .writable)
    }

    @Test func reportsHangupWhenThePipeWriterCloses() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        try loop.addSafetyTimer()
        var reported: IOEvents = []
        // Only .readable requested: EPOLLHUP is reported regardless.
        try loop.addIO(fd: fds[0], events: .readable) { [unowned loop] events in
            reported = events
            loop.exit(code: 0)
        }
        close(fds[1])
        #expect(try loop.run() == 0)
        #expect(reported.contains(.hangup))
    }

    @Test func cancelInsideItsOwnHandlerIsSafeAndFinal() throws {
        let loop = try EventLoop()
        let pair = SocketPair()
        defer { pair.close() }
        try loop.addSafetyTimer()
        var calls = 0
        var source: IOSource?
        source = try loop.addIO(fd: pair.right, events: .readable) { _ in
            calls += 1
            // Not draining: were it still registered, level-triggered epoll would fire again.
            source?.cancel()
            source?.cancel()
            calls += 10 // the handler's captures stay alive until it returns
        }
        try loop.addTimer(at: Clock.monotonic.now() + 50_000, accuracy: 1) { [unowned loop] in loop.exit(code: 3) }
        writeString(pair.left, "x")
        #expect(try loop.run() == 3)
        #expect(calls == 11)
        #expect(source?.isCancelled == true)
    }

    @Test func disabledSourceIsNotDispatchedUntilReenabled() throws {
        let loop = try EventLoop()
        let pair = SocketPair()
        defer { pair.close() }
        try loop.addSafetyTimer()
        var dispatchedAt: [UInt64] = []
        let start = Clock.monotonic.now()
        let source = try loop.addIO(fd: pair.right, events: .readable) { [unowned loop] _ in
            dispatchedAt.append(Clock.monotonic.now())
            _ = readAvailable(pair.right)
            loop.exit(code: 0)
        }
        try source.setEnabled(false)
        #expect(!source.isEnabled)
        let reenable = try loop.addTimer(at: start + 40_000, accuracy: 1) {
            try? source.setEnabled(true)
        }
        writeString(pair.left, "x")
        #expect(try loop.run() == 0)
        #expect(dispatchedAt.count == 1)
        #expect(dispatchedAt.first.map { $0 >= start + 40_000 } == true)
        #expect(!reenable.isArmed)
    }

    @Test func edgeTriggeredSourceFiresOncePerChange() throws {
        let loop = try EventLoop()
        let pair = SocketPair()
        defer { pair.close() }
        try loop.addSafetyTimer()
        var calls = 0
        // Never drained: level-triggered, this would fire on every iteration.
        try loop.addIO(fd: pair.right, events: [.readable, .edgeTriggered]) { _ in calls += 1 }
        let start = Clock.monotonic.now()
        try loop.addTimer(at: start + 20_000, accuracy: 1) { writeString(pair.left, "b") }
        try loop.addTimer(at: start + 60_000, accuracy: 1) { [unowned loop] in loop.exit(code: 0) }
        writeString(pair.left, "a")
        #expect(try loop.run() == 0)
        #expect(calls == 2)
    }

    @Test func eventsDescribeThemselves() {
        #expect(IOEvents([.readable, .hangup]).description == "[readable, hangup]")
        #expect(IOEvents(rawValue: 0x400).description == "[0x400]")
        #expect(IOEvents.readable.rawValue == 0x001 && IOEvents.writable.rawValue == 0x004)
        #expect(IOEvents.edgeTriggered.rawValue == 1 << 31)
    }

    @Test func exitBeforeRunReturnsImmediately() throws {
        let loop = try EventLoop()
        loop.exit(code: 12)
        #expect(try loop.run() == 12)
        #expect(loop.isFinished)
        // Finished for good: a second run returns the same code at once.
        #expect(try loop.run() == 12)
    }

    @Test func negativeExitCodesAreReturnedNotThrown() throws {
        let loop = try EventLoop()
        try loop.addTimer(at: 0, accuracy: 1) { [unowned loop] in loop.exit(code: -5) }
        #expect(try loop.run() == -5)
    }

    @Test func addingToAFinishedLoopThrowsESTALE() throws {
        let loop = try EventLoop()
        loop.exit(code: 0)
        _ = try loop.run()
        let error = #expect(throws: SystemdError.self) {
            try loop.addDefer { }
        }
        #expect(error?.errno == ESTALE)
        #expect(error?.function == "sd_event_add_defer")
    }

    @Test func invalidFdIsReportedAsError() throws {
        let loop = try EventLoop()
        let error = #expect(throws: SystemdError.self) {
            try loop.addIO(fd: 9_999, events: .readable) { _ in }
        }
        #expect(error?.errno == EBADF)
        #expect(error?.function == "sd_event_add_io")
    }

    @Test func iterationCountsDispatches() throws {
        let loop = try EventLoop()
        let before = loop.iteration
        let source = try loop.addDefer { }
        source.trigger()
        #expect(try loop.runIteration(timeoutUSec: 0))
        #expect(loop.iteration > before)
        // Nothing left to do: a zero-timeout iteration dispatches nothing.
        #expect(try loop.runIteration(timeoutUSec: 0) == false)
    }

    @Test func nowIsTheIterationTimestamp() throws {
        let loop = try EventLoop()
        // Before the first iteration: the current time.
        let early = loop.nowMonotonic
        let reference = Clock.monotonic.now()
        #expect(early <= reference && reference - early < 1_000_000)
        var inside: [UInt64] = []
        try loop.addTimer(at: 0, accuracy: 1) { [unowned loop] in
            let first = loop.nowMonotonic
            usleep(5_000)
            // Cached for the whole iteration, unlike the clock.
            inside = [first, loop.nowMonotonic, Clock.monotonic.now()]
            loop.exit(code: 0)
        }
        _ = try loop.run()
        #expect(inside.count == 3)
        #expect(inside[0] == inside[1])
        #expect(inside[2] >= inside[0] + 5_000)
        #expect(loop.now(.realtime) > 1_600_000_000_000_000)
    }
}
