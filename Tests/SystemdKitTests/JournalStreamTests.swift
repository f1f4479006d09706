import Glibc
@testable import SystemdKit
import ScenedTestSupport
import Testing

extension ProcessGlobalStateTests {
    @Suite struct JournalStreamTests {
        /// "<st_dev>:<st_ino>" of `fd`, the way systemd writes JOURNAL_STREAM.
        func streamValue(of fd: Int32) -> String {
            var info = stat()
            fstat(fd, &info)
            return "\(info.st_dev):\(info.st_ino)"
        }

        @Test func matchesTheDeviceAndInodeOfStderr() {
            withEnvironment(["JOURNAL_STREAM": streamValue(of: 2)]) {
                #expect(Journal.isConnectedToJournal())
            }
        }

        @Test func otherStreamsOrNoneDoNotMatch() {
            let pair = SocketPair()
            defer { pair.close() }
            withEnvironment(["JOURNAL_STREAM": streamValue(of: pair.left)]) {
                #expect(!Journal.isConnectedToJournal())
            }
            withEnvironment(["JOURNAL_STREAM": nil]) {
                #expect(!Journal.isConnectedToJournal())
            }
        }

        @Test(arguments: ["", ":", "1", "1:", ":2", "a:b", "1:2:3", "-1:5"])
        func malformedValuesDoNotMatch(_ value: String) {
            #expect(!Journal.stream(value, matches: 2))
        }
    }

    @Suite struct JournalSendWithoutJournaldTests {
        /// On this host nothing listens on journald's socket (the private journald test covers a
        /// live one, and a missing socket file in a namespace). What send returns depends on
        /// whether a stale socket file is left: libsystemd reports ECONNREFUSED, but treats a
        /// missing file (ENOENT) as "no journal here" and returns 0.
        @Test func sendWithoutJournaldDoesNotFailOrCrash() throws {
            let path = "/run/systemd/journal/socket"
            let probe = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            defer { close(probe) }
            let connected = withUnixAddress(path) { connect(probe, $0, $1) } == 0
            let reason = errno
            // Never write into a live host journal from a test.
            try #require(!connected, "a journald listens on \(path); not sending to the host journal")
            let result = Journal.send([.message("systemdkit test: nobody listens"), .priority(.debug)])
            #expect(result == (reason == ENOENT ? 0 : -reason))
        }
    }
}
