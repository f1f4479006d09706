import Glibc

extension RawConnection {
    /// Writes `bytes` on its own thread, so that the caller can read replies meanwhile.
    public final class Writer: @unchecked Sendable {
        private var thread = pthread_t()
        private var joined = false
        private let box: Box

        final class Box: @unchecked Sendable {
            let fd: Int32
            let bytes: [UInt8]
            /// Gives up after this long without progress (a daemon that stopped reading).
            let stallSeconds: Double
            var error: String?
            var written = 0
            let finished = Shared(false)
            init(fd: Int32, bytes: [UInt8], stallSeconds: Double) {
                self.fd = fd
                self.bytes = bytes
                self.stallSeconds = stallSeconds
            }
        }

        /// - Parameter stallSeconds: the write fails once the socket took nothing for this long.
        public init(_ connection: RawConnection, _ bytes: [UInt8], stallSeconds: Double = 60) throws {
            box = Box(fd: connection.fd, bytes: bytes, stallSeconds: stallSeconds)
            let context = Unmanaged.passRetained(box).toOpaque()
            let rc = pthread_create(&thread, nil, { raw in
                let box = Unmanaged<Writer.Box>.fromOpaque(raw!).takeRetainedValue()
                var offset = 0
                var lastProgress = monotonicSeconds()
                while offset < box.bytes.count {
                    let n = box.bytes.withUnsafeBytes { Glibc.send(box.fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                    if n > 0 {
                        offset += n
                        lastProgress = monotonicSeconds()
                        continue
                    }
                    if n < 0 && (errno == EINTR) { continue }
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                        if monotonicSeconds() - lastProgress > box.stallSeconds {
                            box.error = "send stalled for \(box.stallSeconds) s after \(offset) bytes"
                            break
                        }
                        var p = pollfd(fd: box.fd, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&p, 1, 100)
                        continue
                    }
                    box.error = "send failed after \(offset) bytes: \(String(cString: strerror(errno)))"
                    break
                }
                box.written = offset
                box.finished.update { $0 = true }
                return nil
            }, context)
            guard rc == 0 else {
                Unmanaged<Box>.fromOpaque(context).release()
                throw TestFailure("pthread_create failed: \(rc)")
            }
        }

        /// Whether everything was written or the write gave up.
        public var isFinished: Bool { box.finished.value }

        /// Joins the thread; fails if the write failed.
        public func finish() throws {
            join()
            if let error = box.error { throw TestFailure(error) }
        }

        /// Joins the thread; returns the bytes written and the error that stopped it, if any.
        @discardableResult
        public func join() -> (written: Int, error: String?) {
            if !joined {
                pthread_join(thread, nil)
                joined = true
            }
            return (box.written, box.error)
        }
    }
}
