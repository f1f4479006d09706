import Glibc
import ScenedTestSupport
import SystemdKit
import Testing

extension ProcessGlobalStateTests {
    /// Runs JournaldChild's tests in a re-executed test binary inside private mount and PID
    /// namespaces: tmpfs over /run and /var/log/journal, a private journald.conf, and (for the
    /// round trip) a journald of its own. The host's /run, journal and cgroups stay untouched;
    /// when the namespace's first process exits the kernel kills the rest (journald included).
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
                SYSTEMD_LOG_TARGET=console \(journald) &
                i=0
                while [ ! -S /run/systemd/journal/socket ]; do
                    i=$((i + 1))
                    if [ $i -gt 500 ]; then echo "journald did not start"; exit 70; fi
                    sleep 0.01
                done
            fi
            "$@"
            """

        /// Runs the JournaldChild tests for `role`; returns the names of those that finished.
        func runChild(role: String, startJournald: Bool) throws -> Set<String> {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let marker = directory.file("finished")
            let arguments = [Self.unshare, "--mount", "--propagation", "private", "--pid", "--fork",
                             "--kill-child", "--mount-proc", "/bin/sh", "-c", Self.script, "sh"]
                + Binaries.thisTestBinary(filter: "JournaldChild")
            let child = try ChildProcess(arguments, environment: [
                "SYSTEMDKIT_CHILD_ROLE": role,
                "SYSTEMDKIT_CHILD_MARKER": marker,
                "SYSTEMDKIT_START_JOURNALD": startJournald ? "1" : "0",
            ], directory: directory.path, label: "child")
            let status = child.finish(within: 60)
            #expect(status == 0, "child tests in a private namespace failed:\n\((child.stdout + child.stderr).suffix(6000))")
            let finished = readTextFile(marker).split(separator: "\n").map(String.init)
            return Set(finished)
        }

        @Test(.enabled(if: available, "needs root, unshare and systemd-journald"))
        func sendWithoutJournaldAndItsWireFormat() throws {
            #expect(try runChild(role: "no-journald", startJournald: false) == [
                "missingSocketDropsSilently", "staleSocketIsRefused", "wireFormat",
            ])
        }

        @Test(.enabled(if: available, "needs root, unshare and systemd-journald"))
        func roundTripThroughPrivateJournald() throws {
            #expect(try runChild(role: "journald", startJournald: true) == [
                "fieldsRoundTrip", "matchesAndCursors", "directoryAndFiles", "followInEventLoop",
            ])
        }
    }
}
