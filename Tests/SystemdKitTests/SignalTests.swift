import Glibc
import SystemdKit
import Testing

extension ProcessGlobalStateTests {
    @Suite struct SignalTests {
        /// Runs `body` with this thread's signal mask saved, and restores it afterwards, first
        /// taking any of `signals` still pending so that unblocking can't deliver them.
        func preservingSignalMask(_ signals: [Int32], _ body: () throws -> Void) rethrows {
            var saved = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &saved)
            defer {
                var set = sigset_t()
                sigemptyset(&set)
                for signal in signals { sigaddset(&set, signal) }
                var zero = timespec(tv_sec: 0, tv_nsec: 0)
                while sigtimedwait(&set, nil, &zero) > 0 {}
                pthread_sigmask(SIG_SETMASK, &saved, nil)
            }
            try body()
        }

        @Test func blockedSignalsAreDispatchedByTheLoop() throws {
            try preservingSignalMask([SIGUSR1, SIGUSR2]) {
                EventLoop.blockSignals([SIGUSR1, SIGUSR2])
                var mask = sigset_t()
                pthread_sigmask(SIG_BLOCK, nil, &mask)
                #expect(sigismember(&mask, SIGUSR1) == 1 && sigismember(&mask, SIGUSR2) == 1)

                let loop = try EventLoop()
                try loop.addSafetyTimer()
                var received: [Int32] = []
                for signal in [SIGUSR1, SIGUSR2] {
                    try loop.addSignal(signal) { [unowned loop] signo in
                        received.append(signo)
                        if received.count == 2 { loop.exit(code: 0) }
                    }
                }
                // raise() is thread-directed: the signal stays pending on this thread (which
                // blocks it) until the loop's signalfd, read on this thread, takes it.
                // kill(getpid()) would go to any thread of the test process that doesn't
                // block it, which this test does not control.
                try loop.addTimer(at: 0, accuracy: 1) {
                    raise(SIGUSR2)
                    raise(SIGUSR1)
                }
                #expect(try loop.run() == 0)
                #expect(received.sorted() == [SIGUSR1, SIGUSR2].sorted())
            }
        }

        @Test func unblockedSignalIsRefusedWithEBUSY() throws {
            // Worker threads of the test runner block most signals; unblock one to see the check.
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGWINCH)
            var saved = sigset_t()
            pthread_sigmask(SIG_UNBLOCK, &set, &saved)
            defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
            let loop = try EventLoop()
            #expect(throws: SystemdError(errno: EBUSY, function: "sd_event_add_signal")) {
                try loop.addSignal(SIGWINCH) { _ in }
            }
        }
    }
}
