import SystemdKit

extension VarlinkServer {
    /// Logged at most `RateLimiter`'s burst per interval: a hostile client must not flood it.
    func warn(_ message: String) {
        let verdict = logLimiter.allow(now: now())
        guard verdict.allowed else { return }
        let suffix = verdict.suppressed > 0 ? " (\(verdict.suppressed) similar messages suppressed)" : ""
        Diagnostics.warning(message + suffix)
    }

    /// A journal entry (rate-limited like `warn`) for a client refused or cut off by a limit.
    func reportLimit(_ limit: String, peer: PeerCredentials, _ what: String, detail: String = "") {
        let verdict = logLimiter.allow(now: now())
        guard verdict.allowed else { return }
        let suffix = verdict.suppressed > 0 ? " (\(verdict.suppressed) similar messages suppressed)" : ""
        let message = "\(what) (pid \(peer.pid), uid \(peer.uid)): \(limit) exceeded\(detail)\(suffix)"
        guard let log else { return Diagnostics.warning(message) }
        log(LogEntry(priority: .warning, messageID: MessageID.clientLimit, message: message, fields: [
            ("SCENED_LIMIT", limit), ("SCENED_CLIENT_PID", String(peer.pid)),
            ("SCENED_CLIENT_UID", String(peer.uid)), ("SCENED_CLIENT_GID", String(peer.gid)),
        ]))
    }
}
