import Glibc
import SystemdKit
import Testing

/// Sources must release their handler closures (and what they capture) when cancelled or
/// when the loop goes away, and handles must stay safe to use afterwards.
@Suite struct EventSourceLifetimeTests {
    final class Tracker {}

    @Test func cancelReleasesTheHandler() throws {
        let loop = try EventLoop()
        weak var weakTracker: Tracker?
        let source: TimerSource
        do {
            let tracker = Tracker()
            weakTracker = tracker
            source = try loop.addTimer(at: .max) { _ = tracker }
        }
        #expect(weakTracker != nil)
        source.cancel()
        #expect(weakTracker == nil)
        #expect(source.isCancelled)
    }

    @Test func freeingTheLoopReleasesEveryHandler() throws {
        weak var weakTracker: Tracker?
        weak var weakLoop: EventLoop?
        var handles: [EventSource] = []
        let pair = SocketPair()
        defer { pair.close() }
        do {
            let loop = try EventLoop()
            weakLoop = loop
            let tracker = Tracker()
            weakTracker = tracker
            handles.append(try loop.addIO(fd: pair.left, events: .readable) { _ in _ = tracker })
            handles.append(try loop.addTimer(at: .max) { _ = tracker })
            handles.append(try loop.addDefer { _ = tracker })
            handles.append(try loop.addPost { _ = tracker })
        }
        #expect(weakLoop == nil)
        #expect(weakTracker == nil)
        // Handles that outlive their loop are inert, not dangling.
        for handle in handles {
            #expect(handle.isCancelled)
            #expect(!handle.isEnabled)
            handle.cancel()
            #expect(throws: SystemdError(errno: ESTALE, function: "sd_event_source_set_enabled")) {
                try handle.setEnabled(true)
            }
        }
        #expect((handles[2] as? DeferSource)?.trigger() == false)
    }

    @Test func finishedRunBreaksCyclesThroughTheLoop() throws {
        weak var weakLoop: EventLoop?
        do {
            let loop = try EventLoop()
            weakLoop = loop
            // Strong captures of the loop: a cycle loop -> source -> handler -> loop.
            try loop.addTimer(at: 0, accuracy: 1) { loop.exit(code: 0) }
            try loop.addTimer(at: .max) { loop.exit(code: 1) }
            #expect(try loop.run() == 0)
        }
        #expect(weakLoop == nil)
    }

    @Test func handlerMayDropItsOwnHandle() throws {
        let loop = try EventLoop()
        try loop.addSafetyTimer()
        weak var weakTracker: Tracker?
        var source: DeferSource?
        do {
            let tracker = Tracker()
            weakTracker = tracker
            source = try loop.addDefer { [unowned loop] in
                _ = tracker
                source?.cancel()
                source = nil
                loop.exit(code: 0)
            }
        }
        source?.trigger()
        #expect(try loop.run() == 0)
        #expect(source == nil)
        #expect(weakTracker == nil)
    }

    @Test func operationsOnCancelledSourcesThrowESTALE() throws {
        let loop = try EventLoop()
        let pair = SocketPair()
        defer { pair.close() }
        let source = try loop.addIO(fd: pair.left, events: .readable) { _ in }
        try source.setPriority(-5)
        #expect(source.priority == -5)
        try source.setDescription("test-io")
        source.cancel()
        #expect(source.events == [])
        #expect(throws: SystemdError(errno: ESTALE, function: "sd_event_source_set_io_events")) {
            try source.setEvents(.writable)
        }
        #expect(throws: SystemdError(errno: ESTALE, function: "sd_event_source_set_priority")) {
            try source.setPriority(1)
        }
    }
}
