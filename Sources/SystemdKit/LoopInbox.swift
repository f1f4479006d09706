/// Where a program's loop sources report, as values, to its one executor.
///
/// A source added with `posting:` hands its value to the inbox when it fires; the inbox hands
/// it to the handler given by whoever runs the loop (`open`). So the parts of a program that
/// add sources never hold a reference to the part that acts on them, and the one switch over
/// `Input` in the executor is the whole list of what can wake it.
///
/// Loop-thread-only, like the loop. The handler lives from `open` to `close`; `run` closes
/// when the loop finishes, which breaks the cycle a handler forms by capturing its owner.
public final class LoopInbox<Input> {
    private var handler: ((Input) -> Void)?

    public init() {}

    /// Starts delivering: every post from now on reaches `handler`.
    public func open(_ handler: @escaping (Input) -> Void) {
        self.handler = handler
    }

    /// Stops delivering; posts are dropped from now on.
    public func close() {
        handler = nil
    }

    public var isOpen: Bool { handler != nil }

    /// Hands `input` to the handler at once (from a source's dispatch, or from the executor
    /// itself). Dropped while closed.
    public func post(_ input: Input) {
        handler?(input)
    }

    /// Runs `loop` until it exits, then closes the inbox.
    public func run(_ loop: EventLoop) throws(SystemdError) -> Int32 {
        defer { close() }
        return try loop.run()
    }
}

extension EventLoop {
    /// A timer (see `addTimer(clock:at:accuracy:priority:handler:)`) that posts `input`.
    @discardableResult
    public func addTimer<Input>(
        clock: Clock = .monotonic, at usec: UInt64, accuracy: UInt64 = 0, priority: Int64 = 0,
        posting input: Input, to inbox: LoopInbox<Input>
    ) throws(SystemdError) -> TimerSource {
        try addTimer(clock: clock, at: usec, accuracy: accuracy, priority: priority) { inbox.post(input) }
    }

    /// A defer source (see `addDefer(priority:handler:)`) that posts `input` once per trigger.
    @discardableResult
    public func addDefer<Input>(
        priority: Int64 = 0, posting input: Input, to inbox: LoopInbox<Input>
    ) throws(SystemdError) -> DeferSource {
        try addDefer(priority: priority) { inbox.post(input) }
    }

    /// An IO source (see `addIO(fd:events:priority:handler:)`) that posts what `input` makes
    /// of the events that occurred.
    @discardableResult
    public func addIO<Input>(
        fd: Int32, events: IOEvents, priority: Int64 = 0,
        posting input: @escaping (IOEvents) -> Input, to inbox: LoopInbox<Input>
    ) throws(SystemdError) -> IOSource {
        try addIO(fd: fd, events: events, priority: priority) { inbox.post(input($0)) }
    }

    /// A signal source (see `addSignal(_:handler:)`) that posts `input`.
    @discardableResult
    public func addSignal<Input>(
        _ signo: Int32, posting input: Input, to inbox: LoopInbox<Input>
    ) throws(SystemdError) -> EventSource {
        try addSignal(signo) { _ in inbox.post(input) }
    }
}
