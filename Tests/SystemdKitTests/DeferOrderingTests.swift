import Glibc
import SystemdKit
import Testing

/// How sd-event orders a low-priority defer (the daemon's end-of-iteration hook) and post
/// sources against IO: one source is dispatched per iteration, the pending source with the
/// smallest priority value first, and epoll is polled again (without sleeping) before each
/// dispatch.
@Suite struct DeferOrderingTests {
    /// Two readable sockets plus a triggered defer of lower importance.
    @Test func triggeredDeferRunsAfterAllReadyIO() throws {
        let loop = try EventLoop()
        let first = SocketPair(), second = SocketPair()
        defer { first.close(); second.close() }
        try loop.addSafetyTimer()
        var order: [String] = []
        try loop.addIO(fd: first.right, events: .readable) { _ in
            order.append("io1:" + readAvailable(first.right))
        }
        try loop.addIO(fd: second.right, events: .readable) { _ in
            order.append("io2:" + readAvailable(second.right))
        }
        let flush = try loop.addDefer(priority: 100) { [unowned loop] in
            order.append("defer")
            loop.exit(code: 0)
        }
        writeString(first.left, "a")
        writeString(second.left, "b")
        flush.trigger()
        #expect(try loop.run() == 0)
        #expect(order.count == 3)
        #expect(Set(order.prefix(2)) == ["io1:a", "io2:b"])
        #expect(order.last == "defer")
    }

    /// The daemon's real pattern: an IO handler triggers the flush while other IO is pending,
    /// and more IO becomes ready while handlers run. The flush waits for all of it.
    @Test func deferTriggeredFromIOWaitsForPendingAndNewlyReadyIO() throws {
        let loop = try EventLoop()
        let first = SocketPair(), second = SocketPair(), third = SocketPair()
        defer { first.close(); second.close(); third.close() }
        try loop.addSafetyTimer()
        var order: [String] = []
        let flush = try loop.addDefer(priority: 100) { [unowned loop] in
            order.append("flush")
            loop.exit(code: 0)
        }
        for (name, pair) in [("io1", first), ("io2", second)] {
            try loop.addIO(fd: pair.right, events: .readable) { _ in
                _ = readAvailable(pair.right)
                order.append(name)
                flush.trigger()
                // Becomes ready only now, after the loop's poll for this wake-up.
                if order.count == 1 { writeString(third.left, "late") }
            }
        }
        try loop.addIO(fd: third.right, events: .readable) { _ in
            order.append("io3:" + readAvailable(third.right))
        }
        writeString(first.left, "a")
        writeString(second.left, "b")
        #expect(try loop.run() == 0)
        #expect(order.count == 4)
        #expect(Set(order.prefix(2)) == ["io1", "io2"])
        #expect(order[2] == "io3:late")
        #expect(order.last == "flush")
    }

    @Test func readyIOIsDispatchedByPriority() throws {
        let loop = try EventLoop()
        let pairs = [SocketPair(), SocketPair(), SocketPair()]
        defer { pairs.forEach { $0.close() } }
        try loop.addSafetyTimer()
        var order: [Int64] = []
        for (pair, priority) in zip(pairs, [Int64(10), -10, 0]) {
            try loop.addIO(fd: pair.right, events: .readable, priority: priority) { [unowned loop] _ in
                _ = readAvailable(pair.right)
                order.append(priority)
                if order.count == 3 { loop.exit(code: 0) }
            }
            writeString(pair.left, "x")
        }
        #expect(try loop.run() == 0)
        #expect(order == [-10, 0, 10])
    }

    @Test func deferRunsOncePerTriggerAndCanRetriggerItself() throws {
        let loop = try EventLoop()
        try loop.addSafetyTimer()
        var runs = 0
        var source: DeferSource?
        source = try loop.addDefer { [unowned loop] in
            runs += 1
            if runs < 3 { source?.trigger() } else { loop.exit(code: 0) }
        }
        // Off until triggered.
        #expect(source?.isTriggered == false)
        #expect(try loop.runIteration(timeoutUSec: 0) == false)
        #expect(runs == 0)
        source?.trigger()
        source?.trigger()
        #expect(source?.isTriggered == true)
        #expect(try loop.run() == 0)
        #expect(runs == 3)
    }

    @Test func deferWithoutTriggerNeverRuns() throws {
        let loop = try EventLoop()
        var ran = false
        try loop.addDefer(priority: 100) { ran = true }
        try loop.addTimer(at: Clock.monotonic.now() + 20_000, accuracy: 1) { [unowned loop] in loop.exit(code: 0) }
        _ = try loop.run()
        #expect(!ran)
    }

    /// A post source runs after other dispatches, once per round, and, given a larger priority
    /// value than the IO sources, only after all of them.
    @Test func lowPriorityPostRunsAfterAllReadyIO() throws {
        let loop = try EventLoop()
        let first = SocketPair(), second = SocketPair()
        defer { first.close(); second.close() }
        try loop.addSafetyTimer()
        var order: [String] = []
        try loop.addIO(fd: first.right, events: .readable) { _ in order.append("io1:" + readAvailable(first.right)) }
        try loop.addIO(fd: second.right, events: .readable) { _ in order.append("io2:" + readAvailable(second.right)) }
        try loop.addPost(priority: 100) { [unowned loop] in
            order.append("post")
            if order.count >= 3 { loop.exit(code: 0) }
        }
        writeString(first.left, "a")
        writeString(second.left, "b")
        #expect(try loop.run() == 0)
        #expect(order.count == 3)
        #expect(Set(order.prefix(2)) == ["io1:a", "io2:b"])
        #expect(order.last == "post")
    }

    @Test func postDoesNotRunWithoutOtherDispatches() throws {
        let loop = try EventLoop()
        var posts = 0
        try loop.addPost { posts += 1 }
        #expect(try loop.runIteration(timeoutUSec: 20_000) == false)
        #expect(posts == 0)
        var timerRan = false
        try loop.addTimer(at: 0, accuracy: 1) { timerRan = true }
        // One iteration for the timer, the next for the post it made pending.
        #expect(try loop.runIteration(timeoutUSec: 1_000_000))
        #expect(try loop.runIteration(timeoutUSec: 0))
        #expect(timerRan)
        #expect(posts == 1)
        #expect(try loop.runIteration(timeoutUSec: 0) == false)
        #expect(posts == 1)
    }
}
