import CSystemd

/// An sd-event loop (sd-event(3)): the daemon's single thread of control.
///
/// Loop-thread-only: libsystemd's loop is not thread-safe, so the loop, its sources and their
/// handlers must all be used on the thread that runs it. That is why this is a plain,
/// non-Sendable class: the compiler keeps it from crossing threads. To hand work back from
/// other threads, write to an eventfd or pipe watched with `addIO`.
///
/// The loop owns its sources. Handlers that capture the loop (or anything owning it) form a
/// reference cycle, which is broken when the source is cancelled or when `run()` returns: a
/// finished loop can never dispatch again, so it drops every handler then.
public final class EventLoop {
    /// The sd_event*; ours alone (sd_event_new, never the shared thread default).
    let event: OpaquePointer
    /// Boxes of live sources, so a finished loop can drop their handlers.
    private var boxes: [ObjectIdentifier: SourceBox] = [:]

    public init() throws(SystemdError) {
        var event: OpaquePointer?
        try SystemdError.check(sd_event_new(&event), "sd_event_new")
        // sd_event_new returned >= 0, so it stored a loop.
        self.event = event!
    }

    deinit {
        // Frees every (floating) source; their destroy callbacks release the boxes.
        _ = sd_event_unref(event)
    }

    /// Runs until `exit(code:)` and returns that code. Throws only when libsystemd fails.
    public func run() throws(SystemdError) -> Int32 {
        // sd_event_loop() would also return the exit code, but a negative code would then be
        // indistinguishable from an error; the state tells them apart.
        while sd_event_get_state(event) != Int32(SD_EVENT_FINISHED) {
            try SystemdError.check(sd_event_run(event, UInt64.max), "sd_event_run")
        }
        return try finish()
    }

    /// Runs one iteration: waits up to `timeoutUSec` (µs; `UInt64.max` for ever), then
    /// dispatches at most one source. Returns true when something was dispatched.
    @discardableResult
    public func runIteration(timeoutUSec: UInt64) throws(SystemdError) -> Bool {
        let r = try SystemdError.check(sd_event_run(event, timeoutUSec), "sd_event_run")
        if sd_event_get_state(event) == Int32(SD_EVENT_FINISHED) { _ = try finish() }
        return r > 0
    }

    /// True once the loop has exited; it cannot run again.
    public var isFinished: Bool { sd_event_get_state(event) == Int32(SD_EVENT_FINISHED) }

    private func finish() throws(SystemdError) -> Int32 {
        for box in boxes.values { box.handler = nil }
        var code: Int32 = 0
        try SystemdError.check(sd_event_get_exit_code(event, &code), "sd_event_get_exit_code")
        return code
    }

    /// Asks the loop to stop after the current dispatch; `run()` then returns `code`.
    public func exit(code: Int32) {
        // Fails only when the loop already finished, which is what the caller wants anyway.
        _ = sd_event_exit(event, code)
    }

    /// The time the current iteration began (sd_event_now), or the current time before the
    /// first iteration. In µs on `clock`.
    public func now(_ clock: Clock) -> UInt64 {
        var usec: UInt64 = 0
        if sd_event_now(event, clock.id, &usec) >= 0 { return usec }
        return clock.now()
    }

    /// `now(.monotonic)`: the iteration's CLOCK_MONOTONIC time in µs.
    public var nowMonotonic: UInt64 { now(.monotonic) }

    /// How many iterations have begun; sd-event dispatches one source per iteration.
    public var iteration: UInt64 {
        var value: UInt64 = 0
        _ = sd_event_get_iteration(event, &value)
        return value
    }

    /// Lets sd-event send `WATCHDOG=1` at the start of iterations, often enough for the
    /// interval in `WATCHDOG_USEC` (sd_event_set_watchdog). A handler that blocks longer than
    /// the interval gets the service killed, which is the point.
    /// - Returns: true when the service manager asked this process for watchdog pings.
    @discardableResult
    public func enableWatchdog() -> Bool {
        sd_event_set_watchdog(event, 1) > 0
    }

    /// Creates a source through `add` with a retained box as userdata, and hands it to the loop.
    func attach(
        _ function: String, _ handler: SourceHandler, priority: Int64,
        add: (OpaquePointer, UnsafeMutablePointer<OpaquePointer?>, UnsafeMutableRawPointer) -> Int32
    ) throws(SystemdError) -> SourceBox {
        let box = SourceBox(handler: handler)
        let userdata = Unmanaged.passRetained(box).toOpaque()
        var created: OpaquePointer?
        let r = add(event, &created, userdata)
        guard r >= 0, let source = created else {
            Unmanaged<SourceBox>.fromOpaque(userdata).release()
            throw SystemdError(returnCode: r, function: function)
        }
        // From here on the C side's retain is given back by the destroy callback.
        _ = sd_event_source_set_destroy_callback(source) { userdata in
            if let userdata { Unmanaged<SourceBox>.fromOpaque(userdata).takeRetainedValue().sourceWasFreed() }
        }
        box.source = source
        box.loop = self
        boxes[ObjectIdentifier(box)] = box
        // Give our reference to the loop: a floating source lives until cancel() or until the
        // loop is freed, and does not keep the loop alive.
        _ = sd_event_source_set_floating(source, 1)
        _ = sd_event_source_unref(source)
        if priority != 0 {
            let r = sd_event_source_set_priority(source, priority)
            if r < 0 {
                EventSource(box: box).cancel()
                throw SystemdError(returnCode: r, function: "sd_event_source_set_priority")
            }
        }
        return box
    }

    /// A source was freed; stop tracking its box.
    func forget(_ box: SourceBox) {
        boxes[ObjectIdentifier(box)] = nil
    }
}
