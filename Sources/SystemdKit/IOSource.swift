import CSystemd

/// A file descriptor watched by the loop (sd_event_add_io). The loop does not own the fd:
/// cancel the source, then close the fd.
public final class IOSource: EventSource {
    public let fd: Int32

    init(box: SourceBox, fd: Int32) {
        self.fd = fd
        super.init(box: box)
    }

    /// The events currently requested.
    public var events: IOEvents {
        guard let source = box.source else { return [] }
        var raw: UInt32 = 0
        _ = sd_event_source_get_io_events(source, &raw)
        return IOEvents(rawValue: raw)
    }

    /// Changes the requested events, e.g. adds `.writable` while output is queued.
    public func setEvents(_ events: IOEvents) throws(SystemdError) {
        let source = try live("sd_event_source_set_io_events")
        try SystemdError.check(sd_event_source_set_io_events(source, events.rawValue), "sd_event_source_set_io_events")
    }
}

extension EventLoop {
    /// Watches `fd` for `events`; the handler gets the events that occurred (which may include
    /// `.error` and `.hangup` even when not requested). Level-triggered unless
    /// `.edgeTriggered` is included.
    @discardableResult
    public func addIO(
        fd: Int32, events: IOEvents, priority: Int64 = 0, handler: @escaping (IOEvents) -> Void
    ) throws(SystemdError) -> IOSource {
        let box = try attach("sd_event_add_io", .io(handler), priority: priority) { event, source, userdata in
            sd_event_add_io(event, source, fd, events.rawValue, { _, _, revents, userdata in
                if case .io(let handler)? = SourceBox.from(userdata).handler { handler(IOEvents(rawValue: revents)) }
                return 0
            }, userdata)
        }
        return IOSource(box: box, fd: fd)
    }
}
