/// What `scenectl interrupt` does as things happen while it holds an interruption, decided
/// without I/O so that every order of events can be checked in process. The shell
/// (`InterruptCommand`) waits for the events and carries the actions out.
struct InterruptHold: Equatable {
    enum Event: Equatable {
        /// A signal scenectl received; `fromProcess` when kill(2) sent it rather than the
        /// terminal (which sends Ctrl-C and a hang-up to the command's process group too).
        case signal(Int32, fromProcess: Bool)
        /// The command ended, with its wait(2) status.
        case commandExited(waitStatus: Int32)
        /// The daemon closed the connection: the interruption ended with it.
        case daemonGone
    }

    enum Action: Equatable {
        /// Pass the signal on to the command.
        case forward(Int32)
        /// Call EndInterruption and report its events.
        case end
        /// Say on stderr that the interruption ended with the daemon; keep waiting.
        case warnDaemonGone
        /// Done: exit with this status.
        case exit(Int32)
        /// Done: fail with this error.
        case fail(ControlError)
    }

    /// Whether a COMMAND runs under the interruption (else it is held until a signal).
    let runsCommand: Bool
    private(set) var daemonGone = false
    private(set) var finished = false

    init(runsCommand: Bool) {
        self.runsCommand = runsCommand
    }

    mutating func handle(_ event: Event) -> [Action] {
        guard !finished else { return [] }
        switch event {
        case .signal(let signo, let fromProcess):
            // With a command, the command decides when it is over; a signal from the terminal
            // has reached it already.
            if runsCommand { return fromProcess ? [.forward(signo)] : [] }
            finished = true
            return daemonGone ? [.exit(0)] : [.end, .exit(0)]
        case .commandExited(let status):
            guard runsCommand else { return [] }
            finished = true
            return (daemonGone ? [] : [.end]) + [.exit(Self.exitStatus(waitStatus: status))]
        case .daemonGone:
            guard !daemonGone else { return [] }
            daemonGone = true
            if runsCommand { return [.warnDaemonGone] }
            finished = true
            return [.fail(ControlError(.unreachable, "scened closed the connection; the interruption ended with it"))]
        }
    }

    /// A shell's way: the command's exit status, or 128 plus the signal that killed it.
    static func exitStatus(waitStatus status: Int32) -> Int32 {
        let signal = status & 0x7f
        if signal == 0 { return (status >> 8) & 0xff }
        return 128 + signal
    }
}
