import CSystemd

/// A source that runs its handler once per `trigger()` (sd_event_add_defer, kept OFF until
/// triggered). It runs in the same wake-up, before the loop sleeps again.
///
/// As the daemon's end-of-iteration hook, give it a priority numerically larger than the IO
/// sources': sd-event dispatches exactly one source per iteration, always the pending one
/// with the smallest priority value, and polls epoll again (without sleeping) before each
/// dispatch. A triggered low-priority defer therefore runs only after every IO source that
/// is ready, including IO that became ready while earlier handlers ran
/// (verified in DeferOrderingTests).
public final class DeferSource: EventSource {
    init(box: SourceBox) {
        super.init(box: box, enabledMode: Int32(SD_EVENT_ONESHOT))
    }

    /// Schedules one run. Triggering again before it ran is a no-op; triggering from inside
    /// its own handler schedules another run.
    ///
    /// Not throwing, because it is the hot path and libsystemd can only refuse when the loop
    /// has finished (where a no-op is right) or is out of memory.
    /// - Returns: false when the source is cancelled or libsystemd refused.
    @discardableResult
    public func trigger() -> Bool {
        guard let source = box.source else { return false }
        return sd_event_source_set_enabled(source, Int32(SD_EVENT_ONESHOT)) >= 0
    }

    /// True between `trigger()` and the run.
    public var isTriggered: Bool { isEnabled }
}

extension EventLoop {
    /// A defer source that is off until `trigger()`; see `DeferSource` for the ordering.
    @discardableResult
    public func addDefer(priority: Int64 = 0, handler: @escaping () -> Void) throws(SystemdError) -> DeferSource {
        let box = try attach("sd_event_add_defer", .plain(handler), priority: priority) { event, source, userdata in
            let r = sd_event_add_defer(event, source, { _, userdata in
                if case .plain(let handler)? = SourceBox.from(userdata).handler { handler() }
                return 0
            }, userdata)
            // Defer sources start as ONESHOT, i.e. already pending; this one waits for trigger().
            if r >= 0, let created = source.pointee { _ = sd_event_source_set_enabled(created, Int32(SD_EVENT_OFF)) }
            return r
        }
        return DeferSource(box: box)
    }

    /// A post source (sd_event_add_post): its handler runs after any other source was
    /// dispatched, before the loop sleeps again, once per such round (it stays ON).
    ///
    /// It competes by priority like any pending source, so with the default priority 0 it can
    /// run between two IO handlers of the same wake-up; give it a larger value than the IO
    /// sources to run it after all of them.
    @discardableResult
    public func addPost(priority: Int64 = 0, handler: @escaping () -> Void) throws(SystemdError) -> EventSource {
        let box = try attach("sd_event_add_post", .plain(handler), priority: priority) { event, source, userdata in
            sd_event_add_post(event, source, { _, userdata in
                if case .plain(let handler)? = SourceBox.from(userdata).handler { handler() }
                return 0
            }, userdata)
        }
        return EventSource(box: box)
    }
}
