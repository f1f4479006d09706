import CSystemd
import Glibc

/// The Swift closure an event source calls. One enum instead of generic boxes, so that the
/// destroy callback can drop any handler without knowing the source type.
enum SourceHandler {
    case io((IOEvents) -> Void)
    case signal((Int32) -> Void)
    case plain(() -> Void)
}

/// State shared by a source's Swift handle and libsystemd.
///
/// libsystemd holds one retain of the box as the source's userdata; the destroy callback
/// (which runs when the C source is freed, i.e. after `cancel()` or when the loop is freed)
/// gives that retain back and drops the handler, which breaks any cycle a handler forms by
/// capturing its own handle.
final class SourceBox {
    /// The C source; nil once cancelled or freed. Sources are floating (owned by the loop),
    /// so this pointer is valid exactly as long as it is non-nil.
    var source: OpaquePointer?
    var handler: SourceHandler?
    /// Weak: the loop owns the box, not the other way round.
    weak var loop: EventLoop?

    init(handler: SourceHandler) { self.handler = handler }

    /// The box behind a C callback's userdata, retained for the duration of the call.
    static func from(_ userdata: UnsafeMutableRawPointer?) -> SourceBox {
        // Every source is created with a box as userdata (EventLoop.attach), never NULL.
        Unmanaged<SourceBox>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// Called from the destroy callback: the C source is gone.
    func sourceWasFreed() {
        source = nil
        handler = nil
        loop?.forget(self)
    }
}

/// A source in an `EventLoop`: a signal or post source, and the base of the typed sources.
///
/// Like the loop, a source may only be used on the loop's thread. The loop owns the source:
/// dropping this handle does not stop it; `cancel()` does (and so does freeing the loop).
/// After either, every method is a harmless no-op or throws `ESTALE`.
public class EventSource {
    let box: SourceBox
    /// What "enabled" means for this kind: SD_EVENT_ON, or SD_EVENT_ONESHOT for sources that
    /// should fire once per arming (timers, defers).
    let enabledMode: Int32

    init(box: SourceBox, enabledMode: Int32 = Int32(SD_EVENT_ON)) {
        self.box = box
        self.enabledMode = enabledMode
    }

    /// The C source, or `ESTALE` (sd-event's "already terminated") once cancelled or freed.
    func live(_ function: String) throws(SystemdError) -> OpaquePointer {
        guard let source = box.source else { throw SystemdError(errno: ESTALE, function: function) }
        return source
    }

    /// True once `cancel()` was called or the loop was freed.
    public var isCancelled: Bool { box.source == nil }

    /// Whether the source may fire (armed, for timers and defers).
    public var isEnabled: Bool {
        guard let source = box.source else { return false }
        var state: Int32 = 0
        return sd_event_source_get_enabled(source, &state) >= 0 && state != Int32(SD_EVENT_OFF)
    }

    /// Switches the source on or off without removing it.
    public func setEnabled(_ enabled: Bool) throws(SystemdError) {
        let source = try live("sd_event_source_set_enabled")
        try SystemdError.check(
            sd_event_source_set_enabled(source, enabled ? enabledMode : Int32(SD_EVENT_OFF)),
            "sd_event_source_set_enabled")
    }

    /// Dispatch order among sources that are pending at the same time: smaller runs first.
    public var priority: Int64 {
        guard let source = box.source else { return 0 }
        var value: Int64 = 0
        _ = sd_event_source_get_priority(source, &value)
        return value
    }

    public func setPriority(_ priority: Int64) throws(SystemdError) {
        let source = try live("sd_event_source_set_priority")
        try SystemdError.check(sd_event_source_set_priority(source, priority), "sd_event_source_set_priority")
    }

    /// A name for libsystemd's debug logging (SYSTEMD_LOG_LEVEL=debug).
    public func setDescription(_ description: String) throws(SystemdError) {
        let source = try live("sd_event_source_set_description")
        try SystemdError.check(sd_event_source_set_description(source, description), "sd_event_source_set_description")
    }

    /// Removes the source from the loop and releases its handler. Safe to call from inside the
    /// source's own handler (libsystemd then frees it after the handler returns) and more than
    /// once. For IO sources the caller still owns the fd and may close it right after.
    public func cancel() {
        guard let source = box.source else { return }
        // Cleared first: when called from the handler the free is deferred, and a second
        // cancel() must not unref again.
        box.source = nil
        _ = sd_event_source_disable_unref(source)
    }
}
