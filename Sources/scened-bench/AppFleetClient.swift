import Glibc
import SystemdKit
import Varlink

/// A non-blocking connection of the apps bench: its output queued, its input split at NUL
/// bytes. Messages are scanned for the few fields the bench needs, never parsed.
final class FramedConnection {
    let fd: Int32
    private var input: [UInt8] = []
    private var output: [UInt8] = []
    private var outputHead = 0

    init(socket: String) throws { fd = try benchConnect(socket) }
    deinit { close(fd) }

    var hasOutput: Bool { outputHead < output.count }

    func queue(_ bytes: [UInt8]) { output += bytes }

    /// Writes what the socket takes now; false once the peer is gone.
    func flush() -> Bool {
        while outputHead < output.count {
            let n = output.withUnsafeBytes { raw in
                sendSome(fd, UnsafeRawBufferPointer(rebasing: raw[outputHead...]))
            }
            guard let n else { return false }
            if n == 0 { break }
            outputHead += n
        }
        if outputHead == output.count {
            output.removeAll(keepingCapacity: true)
            outputHead = 0
        }
        return true
    }

    /// Reads what is there and hands over each complete message (without its NUL); false at
    /// EOF or on an error.
    func read(_ scratch: inout [UInt8], _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 { return false }
            if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
            input += scratch[0..<n]
            var consumed = 0
            input.withUnsafeBytes { raw in
                while consumed < raw.count, let hit = memchr(raw.baseAddress! + consumed, 0, raw.count - consumed) {
                    let end = UnsafeRawPointer(hit) - raw.baseAddress!
                    body(UnsafeRawBufferPointer(rebasing: raw[consumed..<end]))
                    consumed = end + 1
                }
            }
            if consumed == input.count {
                input.removeAll(keepingCapacity: true)
            } else if consumed > 0 {
                input.removeFirst(consumed)
            }
            if n < scratch.count { return true }
        }
    }
}

/// Field scanning in a framed reply of the daemon's writer.
enum Scan {
    static let seq = Array(#""seq":"#.utf8)
    static let time = Array(#""time":"#.utf8)
    static let name = Array(#""event":""#.utf8)
    static let session = Array(#""session":""#.utf8)

    /// `{"error":…`: the reply is an error.
    static func isError(_ m: UnsafeRawBufferPointer) -> Bool { m.count > 2 && m[2] == UInt8(ascii: "e") }

    /// The offset just after the first occurrence of `key`.
    static func after(_ key: [UInt8], in m: UnsafeRawBufferPointer) -> Int? {
        guard let first = key.first, m.count >= key.count else { return nil }
        var i = 0
        let last = m.count - key.count
        while i <= last {
            guard let hit = memchr(m.baseAddress! + i, Int32(first), last - i + 1) else { return nil }
            let at = UnsafeRawPointer(hit) - m.baseAddress!
            var k = 1
            while k < key.count && m[at + k] == key[k] { k += 1 }
            if k == key.count { return at + key.count }
            i = at + 1
        }
        return nil
    }

    static func integer(_ key: [UInt8], in m: UnsafeRawBufferPointer) -> Int64? {
        guard var i = after(key, in: m) else { return nil }
        var v: Int64 = 0
        var digits = 0
        while i < m.count, m[i] >= 48, m[i] <= 57 {
            v = v * 10 + Int64(m[i] - 48)
            i += 1
            digits += 1
        }
        return digits > 0 ? v : nil
    }

    /// A string value (no escapes in the names and ids the bench reads).
    static func string(_ key: [UInt8], in m: UnsafeRawBufferPointer) -> String? {
        guard let start = after(key, in: m) else { return nil }
        var end = start
        while end < m.count, m[end] != UInt8(ascii: "\"") { end += 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: m[start..<end]), as: UTF8.self)
    }

    /// Whether the event's name (`"event":"<name>"`) is `name`.
    static func named(_ name: [UInt8], in m: UnsafeRawBufferPointer) -> Bool {
        guard let start = after(Self.name, in: m), start + name.count < m.count else { return false }
        for k in name.indices where m[start + k] != name[k] { return false }
        return m[start + name.count] == UInt8(ascii: "\"")
    }
}

/// Microseconds since the Unix epoch (the clock of an event's `time`).
func wallMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// The framed call of an io.scened.App or io.scened.Manager method.
func appFrame(_ method: String, _ parameters: JSONObject) -> [UInt8] {
    VarlinkCall(method: method, parameters: parameters).encoded()
}

/// An epoll set over the bench's connections, each by its index (SystemdKit's EpollSet: the
/// Glibc module has no epoll, and poll(2) over two thousand descriptors per wake-up cost the
/// client more than the daemon).
final class BenchPoller {
    private let set: EpollSet

    init() throws {
        do { set = try EpollSet(capacity: 1024) } catch { throw BenchError("epoll: \(error)") }
    }

    func add(_ member: Int32, token: Int) throws {
        do { try set.add(member, token: UInt64(token), events: .readable) } catch { throw BenchError("epoll_ctl: \(error)") }
    }

    /// Stops watching a member (one at EOF would be ready at every wait).
    func remove(_ member: Int32) { set.remove(member) }

    /// The tokens of the members ready within `milliseconds`.
    func wait(milliseconds: Int32, _ body: (Int) -> Void) {
        set.wait(timeout: milliseconds) { token, _ in body(Int(token)) }
    }
}
