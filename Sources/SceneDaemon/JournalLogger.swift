import Glibc
import SceneCore
import SystemdKit

/// Where structured entries go: journald through sd_journal_sendv when our stderr is a journal
/// stream (we run under systemd), readable lines on stderr otherwise.
final class JournalLogger {
    var level: LogLevel
    let toJournal: Bool
    private(set) var sent: UInt64 = 0
    /// Where entries go: journald, readable lines on stderr, or kept in memory (tests).
    enum Destination {
        case journal
        case stderr
        case memory
    }
    let destination: Destination
    /// The entries kept with `.memory`.
    private(set) var kept: [LogEntry] = []

    init(level: LogLevel, toJournal: Bool = Journal.isConnectedToJournal()) {
        self.level = level
        self.toJournal = toJournal
        destination = toJournal ? .journal : .stderr
    }

    init(level: LogLevel, destination: Destination) {
        self.level = level
        toJournal = destination == .journal
        self.destination = destination
    }

    func wants(_ priority: LogLevel) -> Bool { priority <= level }

    /// Logs committed events, one entry per state change.
    func log(_ events: [LifecycleEvent], commandStarts: [Int] = [], pressure: PressureLevel) {
        guard !events.isEmpty, level >= .notice else { return }
        if level >= .info {
            for entry in JournalEntries.entries(for: events, commandStarts: commandStarts, pressure: pressure) where wants(entry.priority) { send(entry) }
            return
        }
        // Below info only the notable changes are logged: don't build entries for the rest
        // (at hundreds of thousands of transitions a second, building them is the cost). The
        // events are still grouped as a whole, so that the entries are the ones info would log.
        guard events.contains(where: JournalEntries.isNotable) else { return }
        for entry in JournalEntries.entries(for: events, commandStarts: commandStarts, pressure: pressure, notableOnly: true) where wants(entry.priority) {
            send(entry)
        }
    }

    func send(_ entry: LogEntry) {
        guard wants(entry.priority) else { return }
        sent &+= 1
        switch destination {
        case .memory:
            kept.append(entry)
        case .journal:
            var fields: [JournalField] = [
                .message(entry.message),
                .priority(Journal.Priority(rawValue: Int32(entry.priority.rawValue)) ?? .info),
                .syslogIdentifier("scened"),
                .messageID(entry.messageID),
            ]
            fields.reserveCapacity(4 + entry.fields.count)
            for (name, value) in entry.fields { fields.append(JournalField(name: name, value: value)) }
            _ = Journal.send(fields)
        case .stderr:
            var line = "scened: \(entry.message)\n"
            line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        }
    }

    func daemon(_ priority: LogLevel, _ id: String, _ message: String, _ fields: [(String, String)] = []) {
        send(LogEntry(priority: priority, messageID: id, message: message, fields: fields))
    }

    /// Where entries about a batch still being gathered wait for it (the pressure its own
    /// changes caused): state changes are logged once committed, so these take their place
    /// among its entries and the journal reads in the order things happened.
    var outbox = Outbox()

    func daemon(batch: UInt64, position: Int, _ priority: LogLevel, _ id: String, _ message: String,
                _ fields: [(String, String)] = []) {
        guard wants(priority) else { return }
        outbox.holdEntry(batch: batch, position: position, LogEntry(priority: priority, messageID: id, message: message, fields: fields))
    }

    /// Logs a committed batch's events with what was held for it, each at its place.
    func log(batch: UInt64, _ events: [LifecycleEvent], commandStarts: [Int], pressure: PressureLevel) {
        let due = outbox.releaseEntries(through: batch)
        var from = 0
        for next in due where next.batch < batch { send(next.entry) }
        let own = due.filter { $0.batch == batch }
        guard !own.isEmpty else {
            log(events, commandStarts: commandStarts, pressure: pressure)
            return
        }
        for next in own {
            let to = min(max(next.position, from), events.count)
            logSlice(events, from, to, commandStarts, pressure)
            send(next.entry)
            from = to
        }
        logSlice(events, from, events.count, commandStarts, pressure)
    }

    /// Events `from..<to`, which start at a command's boundary, with their command starts.
    private func logSlice(_ events: [LifecycleEvent], _ from: Int, _ to: Int, _ starts: [Int], _ pressure: PressureLevel) {
        guard from < to else { return }
        var local = starts.filter { $0 >= from && $0 < to }.map { $0 - from }
        if local.first != 0 { local.insert(0, at: 0) }
        log(Array(events[from..<to]), commandStarts: local, pressure: pressure)
    }

    /// Logs what was held for batches up to `batch` (settled with no events, or failed).
    func release(through batch: UInt64) {
        for item in outbox.releaseEntries(through: batch) { send(item.entry) }
    }
}
