import Testing
import SceneCore

/// Regressions found by Fuzz/timespan: every span's formatted text must read back as itself.
@Suite("Time span parsing")
struct TimeSpanParsingTests {
    @Test("large spans print back as they parse, to the microsecond")
    func largeSpansRoundTrip() {
        // Whole numbers used to be scaled through a Double: "106751991d" exceeded its 9e18
        // guard, and large day counts lost their last digits.
        for usec: Int64 in [9_223_372_036_854_000_000, .max, 104_249_991 * 86_400_000_000 + 1, 9_000_000_000_000_000] {
            let span = TimeSpan(microseconds: usec)
            #expect(TimeSpan(parsing: span.formatted) == span, "\(usec) printed as \(span.formatted)")
        }
        #expect(TimeSpan(parsing: "106751991d 4h 54s")?.microseconds == 9_223_372_036_854_000_000)
    }

    @Test("spans beyond Int64 microseconds are refused, not wrapped")
    func overflowIsRefused() {
        #expect(TimeSpan(parsing: "106751992d") == nil)
        #expect(TimeSpan(parsing: "106751991d 5h") == nil)
        #expect(TimeSpan(parsing: "9223372036854775807us 1us") == nil)
        #expect(TimeSpan(parsing: "1e30s") == nil)
    }

    @Test("fractions still go through the decimal path")
    func fractions() {
        #expect(TimeSpan(parsing: "1.5s")?.microseconds == 1_500_000)
        #expect(TimeSpan(parsing: "0.5ms 2.25us")?.microseconds == 502)
    }
}
