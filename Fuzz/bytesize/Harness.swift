// fuzz-modules: SceneCore SceneReplay
// The byte-size parser (SceneCore's ByteSize, which scenectl, the daemon's configuration and
// scene-replay all use), against both its formatters:
// - `format` (systemd's one-decimal, truncated form) reads back at most a tenth of the unit
//   below the value, and formatting that again gives the same text;
// - `formatExact` (the configuration's) reads back as the same value.
// And scene-replay's --budget: a share is positive and finite.
import SceneCore
import SceneReplay

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzByteSize(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: inputBytes(data, size), as: UTF8.self)

    if let value = ByteSize.parse(text) {
        let shown = ByteSize.format(value)
        guard let back = ByteSize.parse(shown) else {
            require(false, "\"\(shown)\" (from \"\(text)\") does not parse")
            return 0
        }
        let unit: UInt64 = value >= 1024 ? 1 << (10 * UInt64((63 - value.leadingZeroBitCount) / 10)) : 1
        require(back <= value && value - back <= unit / 10 + 1, "\"\(text)\" = \(value), shown \"\(shown)\" = \(back)")
        require(ByteSize.format(back) == shown, "\"\(shown)\" shows as \"\(ByteSize.format(back))\"")

        let exact = ByteSize.formatExact(value)
        require(ByteSize.parse(exact) == value, "\"\(text)\" = \(value), exact \"\(exact)\" = \(String(describing: ByteSize.parse(exact)))")
    }

    if case .percent(let share) = BudgetOption.parse(text) {
        require(share > 0 && share.isFinite, "budget \"\(text)\" is \(share)%")
    }
    return 0
}
