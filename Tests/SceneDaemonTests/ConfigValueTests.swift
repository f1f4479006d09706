import Testing
import SceneCore
@testable import SceneDaemon

@Suite("Configuration value syntaxes")
struct ConfigValueTests {
    static let timeSpanCases: [(String, Int64)] = [
        ("30s", 30_000_000), ("500ms", 500_000), ("5min", 300_000_000), ("1h 30min", 5_400_000_000),
        ("1h30min", 5_400_000_000), ("2 min", 120_000_000), ("1.5s", 1_500_000), ("250us", 250),
        ("1d", 86_400_000_000), ("90", 90_000_000), ("0", 0), ("  7  ", 7_000_000), ("1min 30s", 90_000_000),
        ("3 hours", 10_800_000_000), ("10msec", 10_000), ("1s 500ms", 1_500_000),
        // A number without a unit is seconds, wherever it stands, as systemd reads it.
        ("1.5", 1_500_000), ("1min 30", 90_000_000), ("1h 30", 3_630_000_000),
        ("1w", 604_800_000_000), ("2weeks", 1_209_600_000_000), ("1M", 2_629_800_000_000), ("1y", 31_557_600_000_000),
    ]

    @Test("time spans as systemd writes them", arguments: timeSpanCases)
    func timeSpans(text: String, usec: Int64) {
        #expect(ConfigValues.timeSpan(text) == usec, "\(text)")
    }

    @Test("bad time spans are refused", arguments: [
        "", "s", "5x", "5 parsecs", "-5s", "-5", "5s 3x", "ms500", "5 mins", "1e3s", "five", "5s,",
    ])
    func badTimeSpans(text: String) {
        #expect(ConfigValues.timeSpan(text) == nil, "\(text)")
    }

    @Test("time spans print back as they parse")
    func timeSpanRoundTrip() {
        for usec: Int64 in [0, 1, 999, 1_000, 1_500_000, 5_400_000_000, 86_400_000_000 + 1, 3_723_004_005] {
            let text = ConfigValues.formatTimeSpan(usec)
            #expect(ConfigValues.timeSpan(text) == usec, "\(usec) printed as \(text)")
        }
        #expect(ConfigValues.formatTimeSpan(5_400_000_000) == "1h 30min")
        #expect(ConfigValues.formatTimeSpan(500_000) == "500ms")
    }

    @Test("countdowns are rounded to whole seconds, or milliseconds below one second")
    func approximateTimeSpans() {
        #expect(TimeSpan(microseconds: 29_994_940).approximate == "30s")
        #expect(TimeSpan(microseconds: 270_400_000).approximate == "4min 30s")
        #expect(TimeSpan(microseconds: 1_000_000).approximate == "1s")
        #expect(TimeSpan(microseconds: 420_600).approximate == "421ms")
        #expect(TimeSpan(microseconds: 0).approximate == "0")
    }

    static let sizeCases: [(String, UInt64)] = [
        ("512", 512), ("512B", 512), ("1K", 1024), ("1KB", 1024), ("512M", 512 << 20), ("512MB", 512 << 20),
        ("8G", 8 << 30), ("8GB", 8 << 30), ("2T", 2 << 40), ("1.5K", 1536), (" 4G ", 4 << 30), ("0", 0),
    ]

    @Test("sizes with K, M, G, T and an optional B", arguments: sizeCases)
    func sizes(text: String, bytes: UInt64) {
        #expect(ConfigValues.bytes(text) == bytes, "\(text)")
    }

    @Test("bad sizes are refused", arguments: ["", "B", "K", "KB", "8X", "8 G", "-1G", "8g", "G8", "1e3", "8GBB", "1.2.3M", "99999999T"])
    func badSizes(text: String) {
        #expect(ConfigValues.bytes(text) == nil, "\(text)")
    }

    @Test("sizes print back as they parse")
    func sizeRoundTrip() {
        for bytes: UInt64 in [1, 512, 1023, 1024, 1536, 512 << 20, 8 << 30, 3 << 40, (8 << 30) + 1] {
            let text = ConfigValues.formatBytes(bytes)
            #expect(ConfigValues.bytes(text) == bytes, "\(bytes) printed as \(text)")
        }
        #expect(ConfigValues.formatBytes(8 << 30) == "8G")
    }

    static let percentCases: [(String, Double)] = [("90%", 0.90), ("0%", 0.0), ("100%", 1.0), ("92.5%", 0.925), (" 80% ", 0.80)]

    @Test("percentages", arguments: percentCases)
    func percentages(text: String, fraction: Double) {
        #expect(ConfigValues.percent(text) == fraction, "\(text)")
    }

    @Test("bad percentages are refused", arguments: ["", "90", "%", "101%", "-1%", "90 %", "ninety%", "0.9"])
    func badPercentages(text: String) {
        #expect(ConfigValues.percent(text) == nil, "\(text)")
    }

    @Test("percentages print back exactly, finer than tenths too")
    func percentRoundTrip() {
        for text in ["80%", "97%", "92.5%", "92.55%", "33.333%", "0.1%", "100%"] {
            let fraction = ConfigValues.percent(text)!
            let printed = ConfigValues.formatPercent(fraction)
            #expect(printed == text, "\(text) printed as \(printed)")
            #expect(ConfigValues.percent(printed) == fraction)
        }
    }

    @Test("booleans")
    func booleans() {
        for yes in ["1", "yes", "YES", "y", "true", "True", "t", "on", " on "] { #expect(ConfigValues.bool(yes) == true, "\(yes)") }
        for no in ["0", "no", "n", "false", "f", "off", "OFF"] { #expect(ConfigValues.bool(no) == false, "\(no)") }
        for bad in ["", "2", "maybe", "yess", "enable"] { #expect(ConfigValues.bool(bad) == nil, "\(bad)") }
    }
}
