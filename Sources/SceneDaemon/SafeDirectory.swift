import Glibc
import SystemdKit

/// Directories the daemon may trust with its socket and its database: created by it, or owned
/// by it (or root) and writable by nobody else, reached through directories that only root or
/// the daemon's user can change (or sticky ones, like /tmp, where nobody may rename another's
/// entries). Like systemd's checks on runtime directories, this refuses instead of repairing:
/// an unsafe mode found is reported, never widened or changed.
enum SafeDirectory {
    struct Refusal: Error, CustomStringConvertible {
        let path: String
        let reason: String
        var description: String { "refusing to use \(path): \(reason)" }
    }

    private static func currentDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "." }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    /// Makes sure `path` is a safe directory, creating what is missing with `mode`.
    static func prepare(_ path: String, mode: mode_t) throws(Refusal) {
        let me = geteuid()
        var current = ""
        let absolute = path.hasPrefix("/") ? path : currentDirectory() + "/" + path
        let parts = absolute.split(separator: "/").filter { $0 != "." }
        for (index, part) in parts.enumerated() {
            current += "/" + part
            let last = index == parts.count - 1
            var st = stat()
            if lstat(current, &st) != 0 {
                guard errno == ENOENT else { throw Refusal(path: current, reason: String(cString: strerror(errno))) }
                // Ours from here on: created with exactly `mode` (umask aside, which only narrows).
                guard mkdir(current, mode) == 0 || errno == EEXIST else {
                    throw Refusal(path: current, reason: "cannot create it: \(String(cString: strerror(errno)))")
                }
                guard lstat(current, &st) == 0 else { throw Refusal(path: current, reason: String(cString: strerror(errno))) }
            }
            if !last && st.st_mode & S_IFMT == S_IFLNK {
                // A link among the ancestors (/var/run → /run) is judged by where it leads.
                guard stat(current, &st) == 0 else { throw Refusal(path: current, reason: String(cString: strerror(errno))) }
            }
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw Refusal(path: current, reason: st.st_mode & S_IFMT == S_IFLNK
                              ? "it is a symbolic link, which another user could point elsewhere" : "it is not a directory")
            }
            if st.st_uid != 0 && st.st_uid != me {
                throw Refusal(path: current, reason: "it belongs to \(UserDatabase.userName(st.st_uid)) (uid \(st.st_uid)), not to \(UserDatabase.userName(me)) (uid \(me)) or root; another user created it first")
            }
            let othersMayWrite = st.st_mode & (S_IWGRP | S_IWOTH) != 0
            if last {
                if othersMayWrite {
                    throw Refusal(path: current, reason: "its mode \(String(st.st_mode & 0o7777, radix: 8)) lets other users write to it; make it 0700 or 0755 (chmod go-w)")
                }
            } else if othersMayWrite && st.st_mode & S_ISVTX == 0 {
                throw Refusal(path: current, reason: "other users may write to it (mode \(String(st.st_mode & 0o7777, radix: 8)), not sticky), so they could replace what is inside")
            }
        }
    }
}
