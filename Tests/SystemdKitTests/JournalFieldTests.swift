import Glibc
import SystemdKit
import Testing

@Suite struct JournalFieldTests {
    @Test(arguments: ["MESSAGE", "A", "X_1", "SCENE_SESSION", "CODE_LINE", String(repeating: "N", count: 64)])
    func acceptsValidNames(_ name: String) {
        #expect(JournalField.isValidName(name))
    }

    /// The names journald silently drops (verified against journald in systemd.md §4.1).
    @Test(arguments: ["", "lowercase", "_PRIVATE", "1ABC", "A-B", "Mixed_Case", "A B", "ÄB", "A=B",
                      String(repeating: "N", count: 65)])
    func rejectsInvalidNames(_ name: String) {
        #expect(!JournalField.isValidName(name))
    }

    @Test func sendRefusesInvalidNamesBeforeTalkingToJournald() {
        // EINVAL comes from the check, whether or not a journald is listening.
        #expect(Journal.send([.message("ok"), JournalField(name: "bad", value: "x")]) == -EINVAL)
        #expect(Journal.send([]) == -EINVAL)
    }

    @Test func valuesAsTextAndBytes() {
        let text = JournalField(name: "NOTE", value: "grüße\n2")
        #expect(text.value == "grüße\n2")
        #expect(text.bytes == Array("grüße\n2".utf8))
        #expect(text.description == "NOTE=grüße\n2")
        let binary = JournalField(name: "BLOB", bytes: [0, 0xff, 0x0a])
        #expect(binary.bytes == [0, 0xff, 0x0a])
        #expect(binary != JournalField(name: "BLOB", bytes: [0]))
    }

    @Test func helpersProduceTheStandardFields() {
        #expect(JournalField.message("hi") == JournalField(name: "MESSAGE", value: "hi"))
        #expect(JournalField.priority(.warning) == JournalField(name: "PRIORITY", value: "4"))
        #expect(JournalField.priority(.debug).value == "7")
        #expect(JournalField.syslogIdentifier("scened") == JournalField(name: "SYSLOG_IDENTIFIER", value: "scened"))
        #expect(JournalField.errno(ENOENT) == JournalField(name: "ERRNO", value: "2"))
        #expect(JournalField.messageID("0123456789abcdef0123456789abcdef").name == "MESSAGE_ID")
        let line = #line + 1
        let location = JournalField.codeLocation()
        #expect(location == [
            JournalField(name: "CODE_FILE", value: "SystemdKitTests/JournalFieldTests.swift"),
            JournalField(name: "CODE_LINE", value: String(line)),
            JournalField(name: "CODE_FUNC", value: "helpersProduceTheStandardFields()"),
        ])
    }
}
