// fuzz-modules: SceneTrace
// The trace parser: an accepted trace, written out by TraceWriter, parses to the same events
// (line numbers aside: the writer drops blank and comment lines), and writing that again gives
// the same text.
import SceneTrace

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTrace(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = inputBytes(data, size)
    let trace: Trace
    do {
        trace = try TraceParser.parse(bytes)
    } catch {
        let lines = bytes.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        require(error.line >= 1 && error.line <= lines, "error on line \(error.line) of \(lines)")
        return 0
    }
    let written = TraceWriter.write(trace)
    do {
        let reparsed = try TraceParser.parse(written)
        func unnumbered(_ t: Trace) -> [TraceEvent] { t.events.map { TraceEvent(time: $0.time, $0.kind) } }
        require(unnumbered(reparsed) == unnumbered(trace), "the written trace parses to other events:\n\(written)")
        require(reparsed.scenario == trace.scenario && reparsed.seed == trace.seed, "the written trace lost its meta data")
        require(TraceWriter.write(reparsed) == written, "writing the reparsed trace gave other text")
    } catch {
        require(false, "the written trace does not parse (\(error)):\n\(written)")
    }
    return 0
}
