import CSystemd

/// A one-shot timer (sd_event_add_time). It fires once per arming; `reschedule` re-arms it,
/// also from inside its own handler (libsystemd disarms a one-shot source before calling it).
public final class TimerSource: EventSource {
    public let clock: Clock

    init(box: SourceBox, clock: Clock) {
        self.clock = clock
        super.init(box: box, enabledMode: Int32(SD_EVENT_ONESHOT))
    }

    /// The time (µs on `clock`) the timer is set to, armed or not.
    public var deadline: UInt64? {
        guard let source = box.source else { return nil }
        var usec: UInt64 = 0
        return sd_event_source_get_time(source, &usec) >= 0 ? usec : nil
    }

    /// True while the timer is waiting to fire.
    public var isArmed: Bool { isEnabled }

    /// Sets the deadline to `usec` (µs on `clock`) and arms the timer.
    ///
    /// Not throwing, because it is called from handlers on the hot path and libsystemd can only
    /// refuse when the loop has finished (where a no-op is right) or is out of memory.
    /// - Returns: false when the source is cancelled or libsystemd refused.
    @discardableResult
    public func reschedule(at usec: UInt64) -> Bool {
        guard let source = box.source else { return false }
        return sd_event_source_set_time(source, usec) >= 0
            && sd_event_source_set_enabled(source, Int32(SD_EVENT_ONESHOT)) >= 0
    }

    /// Arms the timer `usec` µs after the start of the current loop iteration (sd_event_now).
    @discardableResult
    public func reschedule(after usec: UInt64) -> Bool {
        guard let source = box.source else { return false }
        return sd_event_source_set_time_relative(source, usec) >= 0
            && sd_event_source_set_enabled(source, Int32(SD_EVENT_ONESHOT)) >= 0
    }

    /// Stops the timer without removing it; `reschedule` arms it again.
    public func disarm() {
        guard let source = box.source else { return }
        _ = sd_event_source_set_enabled(source, Int32(SD_EVENT_OFF))
    }
}

extension EventLoop {
    /// A timer that fires once when `clock` reaches `usec` (µs; a time in the past fires on the
    /// next iteration).
    ///
    /// - Parameter accuracy: how late (µs) the loop may fire it so that wake-ups coalesce.
    ///   As in sd-event, 0 selects the default of 250 ms; pass 1 for the tightest wake-up.
    ///   Timers that come due in the same wake-up are dispatched by priority, but among equal
    ///   priorities not in deadline order (observed: five coalesced timers ran as 1,5,4,3,2);
    ///   callers that need deadline order should keep one timer for their earliest deadline.
    @discardableResult
    public func addTimer(
        clock: Clock = .monotonic, at usec: UInt64, accuracy: UInt64 = 0, priority: Int64 = 0,
        handler: @escaping () -> Void
    ) throws(SystemdError) -> TimerSource {
        let box = try attach("sd_event_add_time", .plain(handler), priority: priority) { event, source, userdata in
            sd_event_add_time(event, source, clock.id, usec, accuracy, { _, _, userdata in
                if case .plain(let handler)? = SourceBox.from(userdata).handler { handler() }
                return 0
            }, userdata)
        }
        return TimerSource(box: box, clock: clock)
    }
}
