// scene-replay: replays JSON-lines traces against the reclaim policy and its baselines on a
// virtual clock, generates the scenario traces, and times decide(). The logic lives in
// SceneReplay; this file only does the I/O. Build with -c release for decision timings.
import Glibc
import SceneReplay

func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func errnoText() -> String { String(cString: strerror(errno)) }

func readFile(_ path: String) throws(ReplayIOError) -> [UInt8] {
    guard let f = fopen(path, "rb") else { throw ReplayIOError(errnoText()) }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
        if n > 0 { out.append(contentsOf: buffer[0..<n]) }
        if n < buffer.count {
            if ferror(f) != 0 { throw ReplayIOError(errnoText()) }
            break
        }
    }
    return out
}

func writeFile(_ path: String, _ text: String) throws(ReplayIOError) {
    guard let f = fopen(path, "wb") else { throw ReplayIOError(errnoText()) }
    var bytes = Array(text.utf8)
    let written = bytes.withUnsafeMutableBytes { fwrite($0.baseAddress, 1, $0.count, f) }
    let closed = fclose(f)
    guard written == bytes.count, closed == 0 else { throw ReplayIOError(errnoText()) }
}

/// Writes all of `text` to a file descriptor (stdio's stdout/stderr globals are not
/// concurrency-safe in Swift 6).
func emit(_ text: String, to fd: Int32) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 {
            if errno == EINTR { continue }
            return
        }
        offset += n
    }
}

let io = ReplayIO(readFile: readFile, writeFile: writeFile,
                  standardOutput: { emit($0, to: 1) }, standardError: { emit($0, to: 2) },
                  clock: monotonicNanos, cpuClock: threadCPUNanos)
exit(ReplayCommand.main(arguments: Array(CommandLine.arguments.dropFirst()), io: io))
