import SystemdKit

/// Keeps systemd's STATUS= line current without flooding the manager: at most one update per
/// interval, the last change always delivered.
final class StatusReporter {
    private let loop: EventLoop
    var interval: UInt64
    private let line: () -> String
    private var lastSent: UInt64 = 0
    private var lastText = ""
    private var timer: TimerSource?
    private var timerArmed = false

    init(loop: EventLoop, interval: UInt64, line: @escaping () -> String) {
        self.loop = loop
        self.interval = interval
        self.line = line
    }

    func changed() {
        let now = Clock.monotonic.now()
        if now >= lastSent + interval {
            send(now)
        } else if !timerArmed {
            timerArmed = true
            let me = Unmanaged.passUnretained(self)
            if timer == nil {
                timer = try? loop.addTimer(at: lastSent + interval, priority: 50) {
                    let reporter = me.takeUnretainedValue()
                    reporter.timerArmed = false
                    reporter.send(Clock.monotonic.now())
                }
            } else {
                timer?.reschedule(at: lastSent + interval)
            }
        }
    }

    /// Sends now, whatever the rate (start-up, reload, errors).
    func sendNow(_ prefix: String = "") {
        lastText = ""
        send(Clock.monotonic.now(), prefix: prefix)
    }

    private func send(_ now: UInt64, prefix: String = "") {
        // Checked now, sent or not: an unchanged line used to leave `lastSent` behind, so once
        // the interval had passed every commit built the line again (2 % of a busy loop).
        lastSent = now
        let text = line()
        guard text != lastText || !prefix.isEmpty else { return }
        lastText = text
        _ = ServiceManager.notify(prefix + "STATUS=" + text)
    }
}
