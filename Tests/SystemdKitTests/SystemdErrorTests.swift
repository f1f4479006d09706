import Glibc
import SystemdKit
import Testing

@Suite struct SystemdErrorTests {
    @Test func takesNegativeReturnCodes() {
        let error = SystemdError(returnCode: -ENOENT, function: "sd_journal_open")
        #expect(error.errno == ENOENT)
        #expect(error.function == "sd_journal_open")
    }

    @Test func namesTheErrno() {
        #expect(SystemdError(errno: ECONNREFUSED, function: "f").errnoName == "ECONNREFUSED")
        #expect(SystemdError(errno: ESTALE, function: "f").errnoName == "ESTALE")
        #expect(SystemdError(errno: 4242, function: "f").errnoName == "E4242")
    }

    @Test func describesFunctionNameAndText() {
        let error = SystemdError(errno: ENOENT, function: "sd_journal_open_directory")
        #expect(error.strerror == "No such file or directory")
        #expect(error.description == "sd_journal_open_directory: ENOENT (No such file or directory)")
    }
}
