import Glibc

/// The write end of `InterruptWatch`'s pipe, for its signal handler: a handler can reach
/// nothing else. Set once, before the handlers are installed.
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// Writes the signal and who sent it into the pipe: write(2) is async-signal-safe, and the
/// pipe turns a signal into something poll(2) sees beside the daemon's socket.
private func recordSignal(_ signo: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _: UnsafeMutableRawPointer?) {
    let saved = errno
    var record: (Int32, Int32) = (signo, info?.pointee.si_code ?? 0)
    _ = withUnsafeBytes(of: &record) { write(signalPipe, $0.baseAddress, $0.count) }
    errno = saved
}

/// What `scenectl interrupt` waits on: its signals, the command's end and the daemon closing
/// the connection, all in one poll(2) with no periodic wake-up.
final class InterruptWatch {
    /// The signals that end a hold, or are passed on to the command; SIGCHLD wakes the wait
    /// when the command ends.
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD]
    private var pipeRead: Int32 = -1
    private var watchingConnection = true

    /// `ownSignals`: take the signals (the scenectl binary); in process, tests stop it through
    /// `shouldStop` instead.
    init(ownSignals: Bool) throws {
        guard ownSignals else { return }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw ControlError(.failure, "pipe failed: \(String(cString: strerror(errno)))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            // A full pipe drops a signal rather than blocking the handler.
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        pipeRead = ends[0]
        signalPipe = ends[1]
        var action = sigaction()
        action.__sigaction_handler.sa_sigaction = recordSignal
        action.sa_flags = SA_SIGINFO | SA_RESTART
        sigemptyset(&action.sa_mask)
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for signo in Self.signals {
            sigaction(signo, &action, nil)
            sigaddset(&unblock, signo)
        }
        // A parent may have left them blocked (the mask survives exec).
        sigprocmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// The next thing that happened. `connection` is the socket to the daemon (nil: not
    /// watched), `command` the command's pid.
    func next(connection: Int32?, command: pid_t?, shouldStop: () -> Bool) -> InterruptHold.Event {
        while true {
            if let command, let status = Self.reap(command) { return .commandExited(waitStatus: status) }
            switch readSignal() {
            case .event(let event): return event
            case .child: continue
            case .none: break
            }
            if shouldStop() { return .signal(SIGINT, fromProcess: true) }
            var fds: [pollfd] = []
            if pipeRead >= 0 { fds.append(pollfd(fd: pipeRead, events: Int16(POLLIN), revents: 0)) }
            let socket = watchingConnection ? connection : nil
            if let socket { fds.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
            // Without its own signals nothing wakes the wait when the command ends or a test
            // asks to stop: look again every 20 ms.
            let ready = poll(&fds, nfds_t(fds.count), pipeRead >= 0 ? -1 : 20)
            guard ready > 0, let socket, fds.last!.revents != 0 else { continue }
            watchingConnection = false
            if Self.closed(socket) { return .daemonGone }
            // The daemon sends nothing unasked on this connection: stop looking at it rather
            // than wake for it again and again.
        }
    }

    private enum Pending {
        case none
        /// SIGCHLD: only a wake-up, to look at the command again.
        case child
        case event(InterruptHold.Event)
    }

    /// A signal the handler recorded.
    private func readSignal() -> Pending {
        guard pipeRead >= 0 else { return .none }
        var record: (Int32, Int32) = (0, 0)
        let size = MemoryLayout.size(ofValue: record)
        guard withUnsafeMutableBytes(of: &record, { read(pipeRead, $0.baseAddress, size) }) == size else { return .none }
        let (signo, code) = record
        if signo == SIGCHLD { return .child }
        // SI_USER, SI_QUEUE, SI_TKILL are not positive: a process sent it; the kernel's (a
        // terminal's Ctrl-C or hang-up) are.
        return .event(.signal(signo, fromProcess: code <= 0))
    }

    /// The command's wait status once it has ended.
    static func reap(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        return result == pid ? status : nil
    }

    /// Whether the peer closed the socket (end of file or an error), looking without reading.
    private static func closed(_ socket: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)
    }
}
