import Glibc

/// Puts `DesktopEntries`' files into a directory of scened's own: each written to a temporary
/// name and renamed (a reader never sees half a file), then the entries of apps that no longer
/// have schemes removed. Only files named scened-*.desktop and mimeinfo.cache are touched, and
/// a mimeinfo.cache not written here (a directory someone else maintains, where
/// update-desktop-database would have listed their entries) is refused, not overwritten.
public enum DesktopDirectory {
    /// The first line of the mimeinfo.cache written here: what marks the directory as ours.
    public static let marker = "# Written by scenectl desktop-entries from scened's routes; do not edit."

    public struct Result: Equatable, Sendable {
        public var written: [String]
        public var removed: [String]
    }

    public static func write(_ files: [String: String], into directory: String) throws(ControlError) -> Result {
        try makeDirectory(directory)
        if let existing = read(directory + "/" + DesktopEntries.cacheName), !existing.hasPrefix(marker + "\n") {
            throw ControlError(.failure, "\(directory)/\(DesktopEntries.cacheName) was not written by scenectl: \(directory) is not a directory of scened's own (choose another with --directory)")
        }
        var written: [String] = []
        // The entries first and the cache last: a lookup never finds a name without its file.
        let names = files.keys.filter { $0 != DesktopEntries.cacheName }.sorted() + (files[DesktopEntries.cacheName] == nil ? [] : [DesktopEntries.cacheName])
        for name in names {
            let text = name == DesktopEntries.cacheName ? marker + "\n" + files[name]! : files[name]!
            try replace(directory, name, with: text)
            written.append(name)
        }
        var removed: [String] = []
        for name in try entries(directory) where files[name] == nil {
            guard unlink(directory + "/" + name) == 0 || errno == ENOENT else {
                throw ControlError(.failure, "cannot remove \(directory)/\(name): \(String(cString: strerror(errno)))")
            }
            removed.append(name)
        }
        return Result(written: written.sorted(), removed: removed.sorted())
    }

    /// The scened-*.desktop files in `directory`.
    static func entries(_ directory: String) throws(ControlError) -> [String] {
        guard let handle = opendir(directory) else {
            throw ControlError(.failure, "cannot read \(directory): \(String(cString: strerror(errno)))")
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name.hasPrefix(DesktopEntries.prefix) && name.hasSuffix(".desktop") { names.append(name) }
        }
        return names
    }

    /// mkdir -p, 0755: desktop entries are for every user to read.
    static func makeDirectory(_ path: String) throws(ControlError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw ControlError(.failure, "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw ControlError(.failure, "\(path) is not a directory")
        }
    }

    /// Through a temporary name of its own (mkstemp): two runs at once (a start and a reload)
    /// each rename whole files, never one half written by the other.
    static func replace(_ directory: String, _ name: String, with text: String) throws(ControlError) {
        let path = directory + "/" + name
        var template = Array((directory + "/." + name + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else { throw ControlError(.failure, "cannot write in \(directory): \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        // The umask may be 077 (scened's units): entries must be readable by everyone.
        _ = fchmod(fd, 0o644)
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            guard n > 0 else {
                let code = errno
                close(fd)
                unlink(temporary)
                throw ControlError(.failure, "cannot write \(temporary): \(String(cString: strerror(code)))")
            }
            offset += n
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw ControlError(.failure, "cannot rename \(temporary) to \(path): \(String(cString: strerror(code)))")
        }
    }

    static func read(_ path: String) -> String? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
