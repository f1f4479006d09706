/// What the daemon acts on after `LogindClient.handle`.
enum LoginNews: Equatable, Sendable {
    /// Some user's verdict may have changed: ask `LogindClient.state.verdict(forUID:)` again.
    case verdictsChanged
    /// `PrepareForSleep`: true before sleep (the sleep delay inhibitor is held until
    /// `releaseInhibitor(.sleep)`), false after resume.
    case prepareForSleep(Bool)
    /// `PrepareForShutdown`: true before shutdown (the shutdown delay inhibitor is held), false
    /// when a shutdown was cancelled.
    case prepareForShutdown(Bool)
    /// logind answers (its sessions are read); once per transition.
    case available
    /// No bus or no logind; once per transition, so the daemon says so once.
    case unavailable(reason: String)
}

/// The delay inhibitors scened holds (logind's `Inhibit(what, …, "delay")`).
enum InhibitorKind: String, CaseIterable, Hashable, Sendable {
    case sleep
    case shutdown
}
