import Glibc

/// Plays the service manager's side of sd_notify: an AF_UNIX datagram socket bound in a
/// private directory, whose path goes into NOTIFY_SOCKET.
final class NotifyListener {
    let directory = TemporaryDirectory()
    let path: String
    let fd: Int32

    init() {
        path = directory.file("notify")
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(fd >= 0, "socket failed: \(errno)")
        let rc = withUnixAddress(path) { bind(fd, $0, $1) }
        precondition(rc == 0, "bind failed: \(errno)")
    }

    deinit {
        close(fd)
        directory.remove()
    }

    /// One datagram's text and the fds that came with it, or nil after `timeoutMS`.
    func receive(timeoutMS: Int32 = 1_000) -> (text: String, fds: [Int32])? {
        var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pollfd, 1, timeoutMS) == 1 else { return nil }
        var data = [UInt8](repeating: 0, count: 4096)
        var control = [UInt8](repeating: 0, count: 256)
        var controlLength = 0
        let received: Int = data.withUnsafeMutableBytes { dataBytes in
            control.withUnsafeMutableBytes { controlBytes in
                var vector = iovec(iov_base: dataBytes.baseAddress, iov_len: dataBytes.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    message.msg_controllen = controlBytes.count
                    let n = recvmsg(fd, &message, Int32(MSG_CMSG_CLOEXEC))
                    controlLength = n >= 0 ? message.msg_controllen : 0
                    return n
                }
            }
        }
        guard received >= 0 else { return nil }
        return (String(decoding: data[..<received], as: UTF8.self), Self.rightsFDs(in: Array(control[..<controlLength])))
    }

    /// The fds of SCM_RIGHTS control messages (CMSG_* are macros, so walk the headers by hand).
    private static func rightsFDs(in control: [UInt8]) -> [Int32] {
        let headerSize = MemoryLayout<cmsghdr>.size
        var fds: [Int32] = []
        var offset = 0
        control.withUnsafeBytes { raw in
            while offset + headerSize <= raw.count {
                let length = raw.loadUnaligned(fromByteOffset: offset, as: Int.self)
                let level = raw.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self)
                let type = raw.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self)
                guard length >= headerSize, offset + length <= raw.count else { break }
                if level == SOL_SOCKET && type == Int32(SCM_RIGHTS) {
                    let count = (length - headerSize) / MemoryLayout<Int32>.size
                    for index in 0..<count {
                        fds.append(raw.loadUnaligned(fromByteOffset: offset + headerSize + index * 4, as: Int32.self))
                    }
                }
                offset += (length + 7) & ~7
            }
        }
        return fds
    }
}
