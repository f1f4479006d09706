// fuzz-modules: SceneReplay SceneControl SceneDaemon
// The three byte-size parsers, each on the same text, each against its own formatter:
// - scenectl's ByteSize: its one-decimal, truncated format reads back at most a tenth of the
//   unit below the value, and formatting that again gives the same text;
// - the daemon configuration's ConfigValues.bytes: its format is exact, so it reads back as
//   the same value;
// - scene-replay's ByteCount: its rounded format reads back within 5% of the value.
@testable import SceneControl
@testable import SceneDaemon
import SceneReplay

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzByteSize(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: inputBytes(data, size), as: UTF8.self)

    if let value = ByteSize.parse(text) {
        let shown = ByteSize.format(value)
        guard let back = ByteSize.parse(shown) else {
            require(false, "scenectl: \"\(shown)\" (from \"\(text)\") does not parse")
            return 0
        }
        let unit: UInt64 = value >= 1024 ? 1 << (10 * UInt64((63 - value.leadingZeroBitCount) / 10)) : 1
        require(back <= value && value - back <= unit / 10 + 1, "scenectl: \"\(text)\" = \(value), shown \"\(shown)\" = \(back)")
        require(ByteSize.format(back) == shown, "scenectl: \"\(shown)\" shows as \"\(ByteSize.format(back))\"")
    }

    if let value = ConfigValues.bytes(text) {
        let shown = ConfigValues.formatBytes(value)
        require(ConfigValues.bytes(shown) == value, "configuration: \"\(text)\" = \(value), shown \"\(shown)\" = \(String(describing: ConfigValues.bytes(shown)))")
    }

    if let value = ByteCount.parse(text) {
        let shown = ByteCount.format(value)
        guard let back = ByteCount.parse(shown) else {
            require(false, "scene-replay: \"\(shown)\" (from \"\(text)\") does not parse")
            return 0
        }
        let error = abs(Double(back) - Double(value))
        require(error <= Double(value) * 0.05 + 0.5, "scene-replay: \"\(text)\" = \(value), shown \"\(shown)\" = \(back)")
    }
    if case .percent(let share) = ByteCount.parseBudget(text) {
        require(share > 0 && share.isFinite, "scene-replay: budget \"\(text)\" is \(share)%")
    }
    return 0
}
