import CSystemd
import Glibc

/// Structured logging to journald (sd_journal_sendv).
public enum Journal {
    /// syslog(3) levels, as journald's `PRIORITY=` field.
    public enum Priority: Int32, Sendable, Hashable, CaseIterable {
        case emergency = 0, alert, critical, error, warning, notice, info, debug
    }

    /// Sends one entry made of `fields` to journald.
    ///
    /// Returns 0 when sent or a negative errno: `-EINVAL` when a field name is invalid (see
    /// `JournalField.isValidName`; nothing is sent, since journald would silently drop the
    /// field), `-ECONNREFUSED` when a stale socket is left but no journald listens.
    /// Note that libsystemd also returns 0, dropping the entry, when journald's socket does not
    /// exist at all (ENOENT): use `isConnectedToJournal()` to decide where to log, not this
    /// result. Never blocks on journald beyond the datagram send.
    @discardableResult
    public static func send(_ fields: [JournalField]) -> Int32 {
        guard !fields.isEmpty else { return -EINVAL }
        var total = 0
        for field in fields {
            guard JournalField.isValidName(field.name) else { return -EINVAL }
            total += field.name.utf8.count + 1 + field.valueByteCount
        }
        // One contiguous buffer for all "NAME=value" texts (on the stack when small) instead of
        // a strdup per field; the iovecs point into it.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(total, 1)) { buffer in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: fields.count) { vectors in
                var offset = 0
                for (index, field) in fields.enumerated() {
                    let start = offset
                    offset = copy(field.name.utf8, into: buffer, at: offset)
                    buffer[offset] = UInt8(ascii: "=")
                    offset += 1
                    switch field.storage {
                    case .text(let text): offset = copy(text.utf8, into: buffer, at: offset)
                    case .bytes(let bytes): offset = copy(bytes, into: buffer, at: offset)
                    }
                    vectors[index] = iovec(
                        iov_base: UnsafeMutableRawPointer(buffer.baseAddress! + start), iov_len: offset - start)
                }
                return sd_journal_sendv(vectors.baseAddress, Int32(fields.count))
            }
        }
    }

    private static func copy<Bytes: Collection<UInt8>>(
        _ bytes: Bytes, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int
    ) -> Int {
        let (_, end) = UnsafeMutableBufferPointer(rebasing: buffer[offset...]).initialize(from: bytes)
        return offset + end
    }

    /// Sends `MESSAGE`, `PRIORITY`, the caller's `CODE_*` fields and `fields`.
    @discardableResult
    public static func log(
        _ priority: Priority, _ message: String, _ fields: [JournalField] = [],
        file: String = #fileID, line: Int = #line, function: String = #function
    ) -> Int32 {
        send([.message(message), .priority(priority)]
            + JournalField.codeLocation(file: file, line: line, function: function) + fields)
    }

    /// A new stream connection to journald whose lines become entries with this
    /// SYSLOG_IDENTIFIER (what systemd gives a service's stdout); nil when journald is not
    /// reachable. The caller owns the descriptor.
    public static func streamFD(identifier: String, priority: Priority = .info) -> Int32? {
        let fd = sd_journal_stream_fd(identifier, priority.rawValue, 0)
        return fd >= 0 ? fd : nil
    }

    /// True when stderr is a stream to journald, i.e. `JOURNAL_STREAM` names the device and
    /// inode of fd 2 (systemd sets it for `StandardError=journal`). Then structured `send` is the
    /// right way to log; otherwise (a terminal, a pipe) print human-readable text.
    public static func isConnectedToJournal() -> Bool {
        guard let value = getenv("JOURNAL_STREAM") else { return false }
        return stream(String(cString: value), matches: 2)
    }

    /// Whether a `JOURNAL_STREAM` value ("<st_dev>:<st_ino>", decimal) names `fd`.
    static func stream(_ value: String, matches fd: Int32) -> Bool {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}
