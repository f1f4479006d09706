import Glibc
import ScenedTestSupport
import SystemdKit
import Testing

extension ProcessGlobalStateTests {
    /// Runs systemdkit-probe's journal checks (Tests/SystemdKitProbe/JournaldChecks.swift)
    /// inside private mount and PID namespaces: tmpfs over /run and /var/log/journal, a private
    /// journald.conf, and (for the round trip) a journald of its own. The host's /run, journal
    /// and cgroups stay untouched; when the namespace's first process exits the kernel kills the
    /// rest (journald included). Only the probe writes to stdout: its report, line by line.
    @Suite struct PrivateJournaldTests {
        static let journald = "/lib/systemd/systemd-journald"
        static let unshare = "/usr/bin/unshare"
        static let available = getuid() == 0 && access(journald, X_OK) == 0 && access(unshare, X_OK) == 0

        static let script = """
            set -eu
            mount -t tmpfs -o mode=0755 tmpfs /run
            mount -t tmpfs -o mode=2755 tmpfs /var/log/journal
            printf '[Journal]\\nStorage=volatile\\nReadKMsg=no\\nForwardToSyslog=no\\nForwardToWall=no\\n' > /run/journald.conf
            mount --bind /run/journald.conf /etc/systemd/journald.conf
            if [ "$SYSTEMDKIT_START_JOURNALD" = 1 ]; then
                SYSTEMD_LOG_TARGET=console \(journald) >&2 &
                i=0
                while [ ! -S /run/systemd/journal/socket ]; do
                    i=$((i + 1))
                    if [ $i -gt 500 ]; then echo "journald did not start" >&2; exit 70; fi
                    sleep 0.01
                done
            fi
            "$@"
            """

        /// Runs the probe in `role` in the namespaces and expects it to report each of `checks` ok.
        func runProbe(role: String, startJournald: Bool, checks: [String],
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
            let probe = try Binaries.require(Binaries.systemdkitProbe)
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let arguments = [Self.unshare, "--mount", "--propagation", "private", "--pid", "--fork",
                             "--kill-child", "--mount-proc", "/bin/sh", "-c", Self.script, "sh", probe, role]
            let child = try ChildProcess(arguments, environment: [
                "SYSTEMDKIT_START_JOURNALD": startJournald ? "1" : "0",
            ], directory: directory.path, label: "probe")
            let status = child.finish(within: 60)
            #expect(status == 0, "systemdkit-probe \(role) in a private namespace ended with \(child.outcome):\n\((child.stdout + child.stderr).suffix(6000))",
                    sourceLocation: sourceLocation)
            expectProbeReported(checks, stdout: child.stdout, diagnostics: child.stderr, sourceLocation: sourceLocation)
        }

        @Test(.enabled(if: available, "needs root, unshare and systemd-journald"))
        func sendWithoutJournaldAndItsWireFormat() throws {
            try runProbe(role: "no-journald", startJournald: false, checks: [
                "missingSocketDropsSilently", "staleSocketIsRefused", "wireFormat",
            ])
        }

        @Test(.enabled(if: available, "needs root, unshare and systemd-journald"))
        func roundTripThroughPrivateJournald() throws {
            try runProbe(role: "journald", startJournald: true, checks: [
                "fieldsRoundTrip", "matchesAndCursors", "directoryAndFiles", "followInEventLoop",
            ])
        }
    }
}
