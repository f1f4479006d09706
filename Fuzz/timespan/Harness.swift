// fuzz-modules: SceneCore SceneDaemon
// Time spans (SceneCore's TimeSpan(parsing:), which the daemon's configuration reads through
// ConfigValues.timeSpan): a parsed span is never negative, its formatted text parses back to
// the same span, and so does the formatted text of any span (the input's first eight bytes as
// a non-negative count of microseconds).
import SceneCore
@testable import SceneDaemon

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTimeSpan(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = inputBytes(data, size)
    let text = String(decoding: bytes, as: UTF8.self)
    let span = TimeSpan(parsing: text)
    require(ConfigValues.timeSpan(text) == span?.microseconds, "the configuration reads \"\(text)\" differently")
    if let span {
        require(span.microseconds >= 0, "\"\(text)\" parsed as a negative span")
        require(TimeSpan(parsing: span.formatted) == span, "\"\(span.formatted)\" (from \"\(text)\") does not read back as \(span.microseconds)us")
        let approximate = TimeSpan(parsing: span.approximate)
        require(approximate != nil, "approximate \"\(span.approximate)\" does not parse")
    }

    if bytes.count >= 8 {
        let raw = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let span = TimeSpan(microseconds: Int64(raw >> 1))
        require(TimeSpan(parsing: span.formatted) == span, "\"\(span.formatted)\" does not read back as \(span.microseconds)us")
    }
    return 0
}
