import CSystemd
import Glibc

extension EventLoop {
    /// Blocks `signals` in the calling thread (sigprocmask), so that they stay pending for the
    /// loop's signalfd instead of running their default action.
    ///
    /// Call it first thing in main, before any thread exists: threads inherit the mask, and a
    /// thread created earlier would still take the default action (SIGTERM kills the process).
    public static func blockSignals(_ signals: [Int32]) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        _ = sigprocmask(SIG_BLOCK, &set, nil)
    }

    /// Dispatches `signo` through the loop; the handler gets the signal number.
    ///
    /// The signal must already be blocked (see `blockSignals`), otherwise this throws `EBUSY`.
    /// Only one source per signal and process.
    @discardableResult
    public func addSignal(_ signo: Int32, handler: @escaping (Int32) -> Void) throws(SystemdError) -> EventSource {
        let box = try attach("sd_event_add_signal", .signal(handler), priority: 0) { event, source, userdata in
            sd_event_add_signal(event, source, signo, { _, info, userdata in
                if case .signal(let handler)? = SourceBox.from(userdata).handler, let info {
                    handler(Int32(bitPattern: info.pointee.ssi_signo))
                }
                return 0
            }, userdata)
        }
        return EventSource(box: box)
    }
}
