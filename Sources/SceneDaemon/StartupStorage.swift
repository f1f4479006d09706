import Glibc
import SceneCore
import SceneStore

/// Opening the store at start-up, and saying what it found: a damaged write-ahead log
/// (refused, or recovered when asked), rows quarantined at load.
enum StartupStorage {
    /// A file of this name in the state directory asks for one `--recover` start, for a
    /// service whose command line the operator does not type (`touch /var/lib/scened/recover`,
    /// then restart). Removed once the store is open.
    static let recoverFileName = "recover"

    static func recoverRequested(_ stateDirectory: String) -> Bool {
        access(stateDirectory + "/" + recoverFileName, F_OK) == 0
    }

    /// The refusal of a damaged log, for stderr and STATUS=: the store's finding (file, frames,
    /// where the copies are), then what to do.
    static func refusal(_ error: StoreError, stateDirectory: String) -> String {
        "\(error). Refusing to start: the intact part of the log is all that can be kept. To start from it (the "
            + "changes after the damage are lost; no identifier or sequence number is handed out twice), run "
            + "scened --recover once (under systemd: touch \(stateDirectory)/\(recoverFileName), then "
            + "systemctl restart scened)"
    }

    /// The journal entry for a refusal; sent only under journald, where the stderr line would
    /// carry no MESSAGE_ID (on a terminal the stderr line says it all).
    static func logRefusal(_ error: StoreError, evidence: String, _ journal: JournalLogger) {
        guard journal.toJournal else { return }
        journal.daemon(.crit, MessageID.logDamaged, "Refusing to start: \(error)",
                       [("SCENED_STORE", error.path), ("SCENED_EVIDENCE", evidence)])
    }

    /// What the open and the load found, into the journal (stderr on a terminal).
    static func report(_ store: SceneStore, quarantined: [QuarantinedRow], recordingFailure: StoreError?, recover: Bool,
                       stateDirectory: String, _ journal: JournalLogger) {
        if let r = store.recovery {
            let i = r.inspection
            journal.daemon(.warning, MessageID.logRecovered,
                           "Recovered from the damaged write-ahead log \(store.path)-wal: \(i.summary). Kept what SQLite "
                               + "replays (\(i.replayedFrames) of \(i.frames) frames) and dropped the rest. Raised the "
                               + "session and event counters by \(r.allowance) (\(r.allowanceReason)) and the task counter "
                               + "by \(r.taskAllowance) (\(r.taskAllowanceReason)), past anything the lost transactions can "
                               + "have handed out: next session s\(r.after.nextSessionNumber), task t\(r.after.nextTaskNumber), "
                               + "event #\(r.after.nextSequence) (were s\(r.before.nextSessionNumber), "
                               + "t\(r.before.nextTaskNumber), #\(r.before.nextSequence)). The damaged files are in "
                               + "\(r.evidence.directory).",
                           [("SCENED_STORE", store.path), ("SCENED_EVIDENCE", r.evidence.directory),
                            ("SCENED_ALLOWANCE", String(r.allowance))])
        } else if recover {
            journal.daemon(.notice, MessageID.logRecovered,
                           "Asked to recover, but the write-ahead log is not damaged (\(store.logInspection.summary)): "
                               + "started as usual, nothing dropped.", [("SCENED_STORE", store.path)])
        } else if store.logInspection.condition != .absent && store.logInspection.condition != .intact {
            Diagnostics.info("write-ahead log \(store.path)-wal: \(store.logInspection.summary); SQLite replays the committed part")
        }
        if recover {
            let file = stateDirectory + "/" + recoverFileName
            if unlink(file) != 0 && errno != ENOENT {
                Diagnostics.warning("cannot remove \(file) (the next start would recover again): \(String(cString: strerror(errno)))")
            }
        }
        for entry in QuarantineReport.entries(for: quarantined) { journal.send(entry) }
        if let failure = recordingFailure {
            Diagnostics.warning("the quarantined rows could not be recorded in the quarantine table (they are still left "
                                + "out and kept): \(failure)")
        }
    }
}
