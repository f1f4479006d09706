import Glibc

/// While streaming (monitor, logs -f), SIGINT and SIGTERM end scenectl with status 0: Ctrl-C
/// is how one stops following. Every line has already been written with write(2), so there is
/// nothing to flush and _exit is safe in a signal handler.
enum Interrupts {
    static func exitQuietly() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signo in [SIGINT, SIGTERM] {
            signal(signo) { _ in _exit(0) }
            sigaddset(&signals, signo)
        }
        // A parent may have left them blocked (the mask survives exec); Ctrl-C must still work.
        sigprocmask(SIG_UNBLOCK, &signals, nil)
    }
}
