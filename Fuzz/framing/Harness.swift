// fuzz-modules: Varlink
// Varlink framing (VarlinkConnection): a byte stream gives the same calls, the same violation
// (or the same unfinished remainder) whether it arrives in one piece or in pieces split at
// input-chosen points; every call re-encoded and fed to a fresh connection decodes as itself.
//
// Input: the first byte picks the message size limit (below 128: the default 1 MiB; otherwise
// a small one, so that the too-large paths are reached), the rest is the stream.
import Varlink

/// Everything a connection yielded for a stream.
struct Yield: Equatable {
    var calls: [VarlinkCall] = []
    var violation: ProtocolViolation?
    var buffered = 0
}

/// Takes calls until the connection needs more data or has failed.
func drain(_ connection: inout VarlinkConnection, into yield: inout Yield) {
    while yield.violation == nil {
        switch connection.nextCall() {
        case .call(let call): yield.calls.append(call)
        case .needMoreData: return
        case .violation(let violation):
            yield.violation = violation
            // A violation is final: asking again gives it again and never a call.
            require(connection.nextCall() == .violation(violation), "violation not sticky")
        }
    }
}

func feed(_ stream: ArraySlice<UInt8>, limits: VarlinkConnection.Limits, splits: [Int]) -> Yield {
    var connection = VarlinkConnection(limits: limits)
    var yield = Yield()
    var start = stream.startIndex
    for end in splits + [stream.endIndex] where yield.violation == nil {
        connection.receive(Array(stream[start..<end]))
        start = end
        drain(&connection, into: &yield)
    }
    yield.buffered = yield.violation == nil ? connection.bufferedInputCount : 0
    return yield
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFraming(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = inputBytes(data, size)
    guard let selector = bytes.first else { return 0 }
    let limits = selector < 128 ? VarlinkConnection.Limits() : VarlinkConnection.Limits(maxMessageBytes: Int(selector - 127) * 8)
    let stream = bytes.dropFirst()

    let whole = feed(stream, limits: limits, splits: [])

    // Split points chosen from the input itself, so a crash replays exactly; up to 16 pieces,
    // some of them empty or a single byte.
    var random = InputRandom(seed: bytes)
    var splits: [Int] = []
    if !stream.isEmpty {
        for _ in 0..<random.below(16) { splits.append(stream.startIndex + random.below(stream.count + 1)) }
        splits.sort()
    }
    let pieces = feed(stream, limits: limits, splits: splits)
    require(pieces == whole, "split at \(splits) gave \(pieces), in one piece \(whole)")
    // Byte by byte: the slowest arrival a socket can produce.
    if stream.count <= 512 {
        let single = feed(stream, limits: limits, splits: Array(stream.indices.dropFirst()))
        require(single == whole, "byte by byte gave \(single), in one piece \(whole)")
    }

    for call in whole.calls {
        var fresh = VarlinkConnection()
        fresh.receive(call.encoded())
        require(fresh.nextCall() == .call(call), "re-encoded call \(call.method) does not decode as itself")
        require(fresh.nextCall() == .needMoreData && fresh.bufferedInputCount == 0, "re-encoded call left bytes")
    }
    return 0
}
