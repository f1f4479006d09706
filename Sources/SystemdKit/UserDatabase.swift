import Glibc

/// Users and groups through NSS (getpwnam_r, getgrnam_r, getpwuid_r): the daemon resolves
/// owners named in its configuration (once, at load and reload), scenectl the service user.
public enum UserDatabase {
    /// A user name or a decimal uid.
    public static func uid(_ text: String) -> UInt32? {
        if let n = UInt32(text), n != UInt32.max { return n }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 16384) { buffer -> UInt32? in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            guard getpwnam_r(text, &entry, buffer.baseAddress!, buffer.count, &result) == 0, result != nil else { return nil }
            return entry.pw_uid
        }
    }

    /// A group name or a decimal gid.
    public static func gid(_ text: String) -> UInt32? {
        if let n = UInt32(text), n != UInt32.max { return n }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 16384) { buffer -> UInt32? in
            var entry = group()
            var result: UnsafeMutablePointer<group>?
            guard getgrnam_r(text, &entry, buffer.baseAddress!, buffer.count, &result) == 0, result != nil else { return nil }
            return entry.gr_gid
        }
    }

    /// The name of a uid, for messages; the number when it has none.
    public static func userName(_ uid: UInt32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 16384) { buffer -> String in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            guard getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result) == 0, result != nil,
                  let name = entry.pw_name else { return String(uid) }
            return String(cString: name)
        }
    }

    /// A user's primary group and home directory, for starting a process as that user.
    public struct Entry: Sendable, Equatable {
        public let uid: UInt32
        public let gid: UInt32
        public let name: String
        public let home: String
    }

    public static func entry(uid: UInt32) -> Entry? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 16384) { buffer -> Entry? in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            guard getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result) == 0, result != nil else { return nil }
            return Entry(uid: entry.pw_uid, gid: entry.pw_gid,
                         name: entry.pw_name.map { String(cString: $0) } ?? String(uid),
                         home: entry.pw_dir.map { String(cString: $0) } ?? "/")
        }
    }
}
