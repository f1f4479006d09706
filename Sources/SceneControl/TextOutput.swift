import Glibc

/// Where scenectl writes: stdout and stderr in the binary, buffers in tests.
public protocol TextOutput: AnyObject {
    /// Writes `text` completely. Throws `OutputClosed` when the reader went away (EPIPE), or a
    /// `ControlError` for other write failures.
    func write(_ text: String) throws
}

/// Writes straight to a file descriptor with write(2), no buffering, so every line reaches a
/// pipe at once (monitor, logs -f) and nothing is lost at exit.
public final class FileDescriptorOutput: TextOutput {
    let fd: Int32

    public init(fd: Int32) {
        self.fd = fd
    }

    public func write(_ text: String) throws {
        var text = text
        let failure: Int32? = text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n >= 0 {
                    offset += n
                } else if errno != EINTR {
                    return errno
                }
            }
            return nil
        }
        guard let failure else { return }
        if failure == EPIPE { throw OutputClosed() }
        throw ControlError(.failure, "write error: \(String(cString: strerror(failure)))")
    }
}
