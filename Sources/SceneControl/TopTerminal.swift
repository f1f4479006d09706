import Glibc

/// The terminal as `scenectl top` drives it: raw keys from stdin, the alternate screen, whole
/// screens written at once. Restores everything on `restore()`, also after SIGINT or SIGTERM.
final class TopTerminal {
    private var saved = termios()
    private var raw = false

    /// Rows and columns of stdout's terminal (80×24 when it cannot say).
    static func size() -> (width: Int, height: Int) {
        var w = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &w) == 0, w.ws_col > 0, w.ws_row > 0 else { return (80, 24) }
        return (Int(w.ws_col), Int(w.ws_row))
    }

    /// Keys unbuffered and not echoed; the alternate screen, cursor hidden.
    func enter() {
        if isatty(0) == 1, tcgetattr(0, &saved) == 0 {
            var settings = saved
            settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
            settings.c_cc.6 = 0  // VMIN: reads return what there is
            settings.c_cc.5 = 0  // VTIME
            raw = tcsetattr(0, TCSANOW, &settings) == 0
        }
        TopTerminal.savedSettings = raw ? saved : nil
        Self.write("\u{1B}[?1049h\u{1B}[?25l")
        // Leave the terminal usable whatever ends the process.
        for signo in [SIGINT, SIGTERM, SIGHUP] {
            signal(signo) { signo in
                TopTerminal.restoreFromSignal()
                _exit(signo == SIGINT ? 0 : 128 + signo)
            }
        }
    }

    func restore() {
        if raw { tcsetattr(0, TCSANOW, &saved) }
        raw = false
        Self.write("\u{1B}[?25h\u{1B}[?1049l")
    }

    /// The whole screen: home, each line cleared to its end, the rest of the screen cleared.
    func draw(_ lines: [String]) {
        Self.write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J")
    }

    /// Waits up to `milliseconds` for a key; nil when none came.
    func key(waitingMilliseconds milliseconds: Int32) -> UInt8? {
        var p = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, milliseconds) > 0 else { return nil }
        var byte: UInt8 = 0
        return read(0, &byte, 1) == 1 ? byte : nil
    }

    // MARK: Signal-safe restore

    nonisolated(unsafe) private static var savedSettings: termios?

    /// Only async-signal-safe calls: tcsetattr and write(2) of static bytes.
    private static func restoreFromSignal() {
        if var settings = savedSettings { tcsetattr(0, TCSANOW, &settings) }
        let leave: StaticString = "\u{1B}[?25h\u{1B}[?1049l"
        _ = Glibc.write(1, leave.utf8Start, leave.utf8CodeUnitCount)
    }

    private static func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(1, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
                offset += n
            }
        }
    }
}
