import Glibc

/// Outcome of a non-blocking read or write.
public enum SocketIOResult: Sendable, Equatable {
    /// This many bytes were transferred (0 only for an empty buffer).
    case bytes(Int)
    case wouldBlock
    /// The peer closed or reset the connection.
    case closed
    case error(Int32)
}

/// AF_UNIX stream sockets on Glibc. Every descriptor returned is close-on-exec.
public enum UnixSocket {
    /// `sun_path` holds 108 bytes including the terminating NUL.
    public static let maxPathBytes = 107

    /// Creates a non-blocking listening socket at `path`.
    ///
    /// The parent directory is created (mode 0755) if missing. An existing socket at `path` is
    /// probed: if nobody accepts (ECONNREFUSED) it is stale and replaced, otherwise another
    /// instance serves there and `.addressInUse` is thrown. The node gets exactly `mode`: it is
    /// set with chmod between bind and listen, when nobody can connect yet (a connect to a
    /// socket that does not listen is refused). Not with a temporary umask: umask is
    /// process-wide, and a process started on another thread meanwhile would inherit it.
    public static func listen(path: String, mode: mode_t = 0o666, backlog: Int32 = 128) throws(SocketError) -> Int32 {
        var address = try makeAddress(path)
        try createParentDirectories(of: path)
        try removeStaleSocket(at: path)

        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system(operation: "socket", path: path, errno: Glibc.errno) }

        let bound = withSockaddr(&address) { bind(fd, $0, $1) }
        let bindErrno = Glibc.errno
        guard bound == 0 else {
            close(fd)
            if bindErrno == EADDRINUSE { throw .addressInUse(path: path) }
            throw .system(operation: "bind", path: path, errno: bindErrno)
        }
        guard chmod(path, mode) == 0 else {
            let code = Glibc.errno
            close(fd)
            unlink(path)
            throw .system(operation: "chmod", path: path, errno: code)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = Glibc.errno
            close(fd)
            unlink(path)
            throw .system(operation: "listen", path: path, errno: code)
        }
        return fd
    }

    /// The filesystem path a socket is bound to (getsockname), e.g. for an inherited,
    /// socket-activated listener; nil for unnamed or abstract sockets.
    public static func boundPath(_ fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let r = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard r == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw -> String in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }

    /// Accepts one pending connection as a non-blocking, close-on-exec descriptor.
    /// Returns nil when nothing is pending (or the peer gave up before being accepted); throws
    /// for real failures such as EMFILE, which the caller must not retry in a tight loop.
    public static func accept(_ listenFD: Int32) throws(SocketError) -> Int32? {
        while true {
            let fd = Glibc.accept(listenFD, nil, nil)
            if fd >= 0 {
                // accept4() is behind _GNU_SOURCE and not visible from Swift, so set the flags here.
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                return fd
            }
            switch Glibc.errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ECONNABORTED: return nil
            case let code: throw .system(operation: "accept", path: "fd \(listenFD)", errno: code)
            }
        }
    }

    /// A blocking, close-on-exec client connection to `path`.
    public static func connect(path: String) throws(SocketError) -> Int32 {
        var address = try makeAddress(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(operation: "socket", path: path, errno: Glibc.errno) }
        while withSockaddr(&address, { Glibc.connect(fd, $0, $1) }) != 0 {
            let code = Glibc.errno
            if code == EINTR { continue }
            close(fd)
            throw .system(operation: "connect", path: path, errno: code)
        }
        return fd
    }

    /// The peer's pid, uid and gid as the kernel recorded them at connect time.
    public static func peerCredentials(_ fd: Int32) -> (pid: Int32, uid: UInt32, gid: UInt32)? {
        // struct ucred is hidden behind _GNU_SOURCE; its layout is three 32-bit fields.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        let result = withUnsafeMutableBytes(of: &credentials) { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0.baseAddress, &length) }
        guard result == 0, length == 12 else { return nil }
        return credentials
    }

    /// The peer's supplementary groups at connect time (SO_PEERGROUPS, Linux 4.13); empty
    /// where the kernel does not report them.
    public static func peerGroups(_ fd: Int32) -> [UInt32] {
        // SO_PEERGROUPS is not in Glibc's Swift module: its value is 59 on every Linux arch.
        let option: Int32 = 59
        var groups = [UInt32](repeating: 0, count: 64)
        while true {
            var length = socklen_t(groups.count * 4)
            let r = groups.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, option, $0.baseAddress, &length) }
            if r == 0 { return Array(groups.prefix(Int(length) / 4)) }
            guard Glibc.errno == ERANGE, Int(length) / 4 > groups.count, groups.count < 65536 else { return [] }
            groups = [UInt32](repeating: 0, count: Int(length) / 4)
        }
    }

    public static func readNonBlocking(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> SocketIOResult {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return .bytes(0) }
        while true {
            let n = recv(fd, base, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            switch Glibc.errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET: return .closed
            case let code: return .error(code)
            }
        }
    }

    /// Writes without raising SIGPIPE; a vanished peer is reported as `.closed`.
    public static func writeNonBlocking(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> SocketIOResult {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return .bytes(0) }
        while true {
            let n = send(fd, base, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if n >= 0 { return .bytes(n) }
            switch Glibc.errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EPIPE, ECONNRESET: return .closed
            case let code: return .error(code)
            }
        }
    }

    // MARK: Helpers

    private static func makeAddress(_ path: String) throws(SocketError) -> sockaddr_un {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, !bytes.contains(0) else { throw .system(operation: "resolve path", path: path, errno: EINVAL) }
        guard bytes.count <= maxPathBytes else { throw .pathTooLong(path: path, byteCount: bytes.count) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return address
    }

    private static func withSockaddr<R>(_ address: inout sockaddr_un, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    private static func createParentDirectories(of path: String) throws(SocketError) {
        var prefix = ""
        let components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        for (i, component) in components.enumerated() {
            prefix += i == 0 ? String(component) : "/" + component
            guard !component.isEmpty, component != "." else { continue }
            if mkdir(prefix, 0o755) != 0, Glibc.errno != EEXIST {
                throw .system(operation: "mkdir \(prefix)", path: path, errno: Glibc.errno)
            }
        }
    }

    /// Unlinks a socket nobody listens on; refuses to touch a live socket or a non-socket.
    private static func removeStaleSocket(at path: String) throws(SocketError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }

        var address = try makeAddress(path)
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard probe >= 0 else { throw .system(operation: "socket", path: path, errno: Glibc.errno) }
        defer { close(probe) }
        if withSockaddr(&address, { Glibc.connect(probe, $0, $1) }) == 0 { throw .addressInUse(path: path) }
        switch Glibc.errno {
        case ECONNREFUSED:
            if unlink(path) != 0, Glibc.errno != ENOENT {
                throw .system(operation: "unlink stale socket", path: path, errno: Glibc.errno)
            }
        case EAGAIN:
            // A live listener whose backlog is full.
            throw .addressInUse(path: path)
        case ENOENT:
            return
        case let code:
            throw .system(operation: "probe existing socket", path: path, errno: code)
        }
    }
}
