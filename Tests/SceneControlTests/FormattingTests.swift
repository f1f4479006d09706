import SceneCore
import Testing
import SystemdKit
import Varlink
@testable import SceneControl

@Suite struct FormattingTests {
    static let sizes: [(UInt64, String)] = [
        (0, "0B"), (1023, "1023B"), (1024, "1.0K"), (1536, "1.5K"), (2047, "1.9K"),
        (52_428_800, "50.0M"), (1 << 30, "1.0G"), (3 * (1 << 30) / 2, "1.5G"), (1 << 40, "1.0T"),
        (UInt64.max, "15.9E"),
    ]

    @Test(arguments: sizes)
    func bytesFormatLikeSystemd(_ bytes: UInt64, _ text: String) {
        #expect(ByteSize.format(bytes) == text)
    }

    @Test func byteSizesParse() {
        #expect(ByteSize.parse("0") == 0)
        #expect(ByteSize.parse("52428800") == 52_428_800)
        #expect(ByteSize.parse("512K") == 524_288)
        // Units are upper case only, as systemd's parse_size takes them (and the daemon's
        // configuration did): one ByteSize for scenectl, the daemon and scene-replay.
        #expect(ByteSize.parse("512k") == nil)
        #expect(ByteSize.parse("50M") == 52_428_800)
        #expect(ByteSize.parse("50MB") == 52_428_800)
        #expect(ByteSize.parse("4096B") == 4096)
        #expect(ByteSize.parse("1.5G") == 1_610_612_736)
        #expect(ByteSize.parse("0.5K") == 512)
        #expect(ByteSize.parse("1.999999999E") != nil)
        for bad in ["", "M", "-1", "1.5", "1.K", ".5K", "1..5K", "12Q", "1 K", "16E", "99999999999999999999", "1.5.5M"] {
            #expect(ByteSize.parse(bad) == nil, "\(bad)")
        }
        // Round trip of what we print (truncated to a tenth) stays within one tenth of the unit.
        #expect(ByteSize.parse(ByteSize.format(UInt64(52_428_800))) == 52_428_800)
        // A one-decimal size shows back as written (found by Fuzz/bytesize: "1.2T" was
        // truncated to the byte and so shown as "1.1T").
        for text in ["1.2T", "1.1G", "3.3M", "9.9E", "1.2K", "1.7P"] {
            #expect(ByteSize.parse(text).map(ByteSize.format) == text, "\(text)")
        }
        #expect(ByteSize.parse("1.2T") == 1_319_413_953_332)
    }

    let utc = TimeFormatter(utc: true)
    /// 2024-11-29 16:40:01.000042 UTC, a Friday.
    let moment: Int64 = 1_732_898_401_000_042

    @Test func timestamps() {
        #expect(utc.timestamp(moment) == "Fri 2024-11-29 16:40:01 UTC")
        #expect(utc.tableTime(moment) == "2024-11-29 16:40:01")
        #expect(utc.clockTime(moment) == "16:40:01.000042")
        #expect(utc.clockTime(moment + 999_958) == "16:40:02.000000")
        #expect(utc.journalTime(moment) == "Nov 29 16:40:01")
        #expect(utc.timestamp(0) == "Thu 1970-01-01 00:00:00 UTC")
        #expect(utc.timestampWithRelative(moment - 300_000_000, now: UInt64(moment)) == "Fri 2024-11-29 16:35:01 UTC; 5min ago")
    }

    static let hour: Int64 = 3_600_000_000
    static let day: Int64 = 86_400_000_000
    static let ages: [(Int64, String)] = [
        (0, "now"), (1, "1us ago"), (999, "999us ago"), (1_000, "1ms ago"), (2_500_000, "2s ago"),
        (61_000_000, "1min 1s ago"), (300_000_000, "5min ago"), (3_720_000_000, "1h 2min ago"),
        (6 * hour, "6h ago"), (24 * hour + 1, "24h ago"), (26 * hour, "1 day 2h ago"),
        (3 * day, "3 days ago"), (15 * day, "2 weeks 1 days ago"),
        (40 * day, "1 months 9 days ago"), (400 * day, "1 years 1 months ago"),
        (-25_000_000, "25s left"),
    ]

    @Test(arguments: ages)
    func relativeTimes(_ age: Int64, _ text: String) {
        #expect(TimeFormatter.relative(moment - age, now: moment) == text)
    }

    @Test func localTimeFollowsTheZone() {
        // Whatever the zone, local formatting gives the same shape and the same seconds.
        let local = TimeFormatter(utc: false).clockTime(moment)
        #expect(local.count == 15)
        #expect(local.hasSuffix(":01.000042"))
    }

    @Test func tableAlignsColumnsAndOmitsLegendOnRequest() {
        var table = Table([.init("NAME"), .init("SIZE", right: true), .init("NOTE")], footer: Table.count(2, "row", "rows"))
        table.append(["a", "1.0K", "short"])
        table.append(["longer-name", "50.0M", ""])
        #expect(table.render(legend: true) == """
            NAME         SIZE NOTE
            a            1.0K short
            longer-name 50.0M

            2 rows listed.

            """)
        #expect(table.render(legend: false) == "a            1.0K short\nlonger-name 50.0M\n")
        let empty = Table([.init("NAME")], footer: Table.count(0, "row", "rows"))
        #expect(empty.render(legend: true) == "NAME\n\n0 rows listed.\n")
        #expect(empty.render(legend: false) == "")
        #expect(Table.count(1, "session", "sessions") == "1 session listed.")
        #expect(Table.count(3, "event", "events", nil) == "3 events.")
    }

    @Test func blockAlignsLabels() {
        var block = Block("● title")
        block.add("Short", "1")
        block.add("Much longer", "two\nlines")
        #expect(block.render() == """
            ● title
                     Short: 1
               Much longer: two
                            lines

            """)
    }

    @Test func monitorLinesHaveFixedColumns() {
        let event: JSONObject = ["seq": 1042, "time": .int(moment), "event": "didBecomeActive", "app": "com.example.mail",
                                 "session": "s42", "state": "foregroundActive"]
        let line = EventTable.monitorLine(event, time: utc)
        #expect(line == "   1042 16:40:01.000042 didBecomeActive            com.example.mail         s42      foregroundActive")
        let header = EventTable.monitorHeader
        #expect(header == "    SEQ TIME            EVENT                      APP                      SESSION  STATE              DETAIL")
        // Columns line up with the header.
        for column in ["TIME", "EVENT", "APP", "SESSION", "STATE"] {
            let offset = header.distance(from: header.startIndex, to: header.firstRange(of: column)!.lowerBound)
            #expect(line[line.index(line.startIndex, offsetBy: offset - 1)] == " ", "\(column)")
        }
        let detailed = EventTable.monitorLine(["seq": 9, "time": .int(moment), "event": "terminated", "app": "com.example.mail",
                                               "session": "s42", "state": "notRunning", "reason": "requested"], time: utc)
        #expect(detailed.firstRange(of: "requested")?.lowerBound.utf16Offset(in: detailed)
                == header.firstRange(of: "DETAIL")?.lowerBound.utf16Offset(in: header), "\(detailed)")
        let discard: JSONObject = ["seq": 7, "time": 0, "event": "didDiscardSceneSessions", "app": "com.example.mail",
                                   "sessions": ["s1", "s2"], "state": "running"]
        #expect(EventTable.sessionCell(discard) == "s1,s2")
        #expect(EventTable.sessionCell(["event": "didFinishLaunching"]) == "-")
    }

    @Test func journalShortLines() {
        let entry = JournalEntry(realtime: UInt64(moment), fields: [
            .message("session s42 connected\nsecond line"), .syslogIdentifier("scened"),
            JournalField(name: "SYSLOG_PID", value: "1234"), JournalField(name: "_PID", value: "99"),
        ])
        #expect(JournalView.shortLine(entry, time: utc) == """
            Nov 29 16:40:01 scened[1234]: session s42 connected
                                          second line
            """)
        let noPid = JournalEntry(realtime: UInt64(moment), fields: [.message("hi"), JournalField(name: "_COMM", value: "scened")])
        #expect(JournalView.shortLine(noPid, time: utc) == "Nov 29 16:40:01 scened: hi")
        let blob = JournalEntry(realtime: UInt64(moment), fields: [JournalField(name: "MESSAGE", bytes: [0x41, 0x01, 0xff])])
        #expect(JournalView.shortLine(blob, time: utc) == "Nov 29 16:40:01 unknown: [3B blob data]")
        #expect(JournalView.shortLine(JournalEntry(realtime: 0, fields: [.syslogIdentifier("scened")]), time: utc) == nil)
    }

    @Test func journalJSONLines() throws {
        let entry = JournalEntry(realtime: 5, cursor: "s=abc", fields: [
            .message("hi"), JournalField(name: "SCENED_EVENT", value: "willEnterForeground"),
            JournalField(name: "SCENED_EVENT", value: "didBecomeActive"), JournalField(name: "BLOB", bytes: [0, 255]),
        ])
        let parsed = try JSONParser.parse(JournalView.jsonLine(entry))
        #expect(parsed == [
            "__CURSOR": "s=abc", "__REALTIME_TIMESTAMP": "5", "MESSAGE": "hi",
            "SCENED_EVENT": ["willEnterForeground", "didBecomeActive"], "BLOB": [0, 255],
        ])
    }
}
