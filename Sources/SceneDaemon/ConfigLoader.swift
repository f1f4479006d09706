import Glibc

/// Finds and applies the configuration the way systemd's daemons do: the main file from the
/// first of /etc, /run, /usr/local/lib, /usr/lib that has one, then drop-ins from every
/// `scened.conf.d/`, in lexical order of file name, a name in /etc masking the same name in
/// /run, which masks /usr/local/lib, which masks /usr/lib.
struct ConfigLoader {
    /// Prefix for every search path (tests and image builds), like systemd's --root.
    var root = ""
    /// An explicit main file (`--config`): replaces the search for the main file; drop-ins
    /// are still read from `<file>.d/`.
    var explicitFile: String?

    static let directories = ["/etc/scened", "/run/scened", "/usr/local/lib/scened", "/usr/lib/scened"]
    static let fileName = "scened.conf"

    struct Result {
        var settings: DaemonSettings
        /// The files applied, in order.
        var files: [String]
        /// Unknown sections and keys: reported, not fatal (systemd ignores them with a warning).
        var warnings: [String]
    }

    /// The files to apply, in order.
    func files() -> [String] {
        var out: [String] = []
        if let explicitFile {
            if fileExists(explicitFile) { out.append(explicitFile) }
            out += dropIns(in: [explicitFile + ".d"])
            return out
        }
        if let main = Self.directories.map({ root + $0 + "/" + Self.fileName }).first(where: fileExists) {
            out.append(main)
        }
        out += dropIns(in: Self.directories.map { root + $0 + "/" + Self.fileName + ".d" })
        return out
    }

    private func dropIns(in directories: [String]) -> [String] {
        var chosen: [String: String] = [:]
        // Earlier directories take precedence: keep the first path seen for each name.
        for dir in directories {
            for name in listConfFiles(dir) where chosen[name] == nil { chosen[name] = dir + "/" + name }
        }
        return chosen.keys.sorted().map { chosen[$0]! }
    }

    func load() throws(ConfigError) -> Result {
        var settings = DaemonSettings()
        var warnings: [String] = []
        var origins: [String: (path: String, line: Int)] = [:]
        let list = files()
        if let explicitFile, !fileExists(explicitFile) {
            throw ConfigError(path: explicitFile, line: nil, message: "no such file")
        }
        for path in list {
            let text: String
            switch readFile(path) {
            case .success(let t): text = t
            case .failure(let failure): throw ConfigError(path: path, line: nil, message: failure.message)
            }
            let file = try ConfigFile.parse(path: path, text: text)
            for a in file.assignments {
                guard let key = SettingKey.find(section: a.section, key: a.key) else {
                    let known = SettingKey.all.contains { $0.section == a.section }
                    warnings.append("\(path):\(a.line): unknown \(known ? "key \"\(a.key)\" in section [\(a.section)]" : "section [\(a.section)]"), ignoring")
                    continue
                }
                if let message = key.apply(&settings, a.value) {
                    throw ConfigError(path: path, line: a.line, message: "\(message) (found \"\(a.value)\")")
                }
                origins[key.key] = (path, a.line)
            }
        }
        // Settings that are only valid together, reported where the last of them was set.
        if !settings.watermarks.isValid {
            let origin = ["CriticalWatermark", "HighWatermark", "LowWatermark"].compactMap { origins[$0] }
                .max { ($0.path, $0.line) < ($1.path, $1.line) }
            throw ConfigError(path: origin?.path ?? "configuration", line: origin?.line,
                              message: "watermarks must satisfy LowWatermark < HighWatermark <= CriticalWatermark")
        }
        return Result(settings: settings, files: list, warnings: warnings)
    }

    private func fileExists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    private func listConfFiles(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasSuffix(".conf"), !name.hasPrefix(".") else { continue }
            if fileExists(dir + "/" + name) { names.append(name) }
        }
        return names
    }

    private func readFile(_ path: String) -> Swift.Result<String, ReadFailure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(ReadFailure(String(cString: strerror(errno)))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(ReadFailure(String(cString: strerror(errno))))
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > 1 << 20 { return .failure(ReadFailure("larger than 1 MiB")) }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(ReadFailure("not valid UTF-8")) }
        return .success(text)
    }

    struct ReadFailure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// `--dump-config`: the effective settings, as a configuration file.
    static func dump(_ settings: DaemonSettings) -> String {
        var out = ""
        var section = ""
        for key in SettingKey.all {
            if key.section != section {
                if !section.isEmpty { out += "\n" }
                section = key.section
                out += "[\(section)]\n"
            }
            out += "\(key.key)=\(key.show(settings))\n"
        }
        return out
    }
}
