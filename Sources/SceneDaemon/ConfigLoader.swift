import Glibc

/// Finds and applies the configuration the way systemd's daemons do: the main file from the
/// first of /etc, /run, /usr/local/lib, /usr/lib that has one, then drop-ins from every
/// `scened.conf.d/`, in lexical order of file name, a name in /etc masking the same name in
/// /run, which masks /usr/local/lib, which masks /usr/lib. As in systemd, a file that is a
/// symbolic link to /dev/null masks without contributing anything (for the main file: the
/// files further down the search path are not read either).
struct ConfigLoader {
    /// Prefix for every search path (tests and image builds), like systemd's --root.
    var root = ""
    /// An explicit main file (`--config`): replaces the search for the main file; drop-ins
    /// are still read from `<file>.d/`.
    var explicitFile: String?

    static let directories = ["/etc/scened", "/run/scened", "/usr/local/lib/scened", "/usr/lib/scened"]
    /// A user's own instance also reads its user's directory, first (as `systemd --user`
    /// reads ~/.config/systemd/user before /etc): `$XDG_CONFIG_HOME/scened`, so that a user
    /// configures the apps their scened starts without privilege. Not under `root`.
    var userDirectory: String?

    /// Every directory searched, highest precedence first.
    var searchDirectories: [String] { (userDirectory.map { [$0] } ?? []) + Self.directories.map { root + $0 } }

    /// The user's directory when this is a user's instance: not root, and started with a
    /// runtime directory (the user manager sets XDG_RUNTIME_DIR; system services get none).
    static func userDirectory(euid: UInt32, environment: (String) -> String?) -> String? {
        guard euid != 0, environment("XDG_RUNTIME_DIR") != nil else { return nil }
        if let config = environment("XDG_CONFIG_HOME"), config.hasPrefix("/") { return config + "/scened" }
        if let home = environment("HOME"), home.hasPrefix("/") { return (home == "/" ? "" : home) + "/.config/scened" }
        return nil
    }
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
        if let main = searchDirectories.map({ $0 + "/" + Self.fileName }).first(where: { fileExists($0) || isMask($0) }),
           !isMask(main) {
            out.append(main)
        }
        out += dropIns(in: searchDirectories.map { $0 + "/" + Self.fileName + ".d" })
        return out
    }

    func dropIns(in directories: [String]) -> [String] {
        var chosen: [String: String?] = [:]
        // Earlier directories take precedence: keep the first path seen for each name; a mask
        // (a link to /dev/null) is kept too, as nil, so that it hides the same name further down.
        for dir in directories {
            for (name, masked) in listConfFiles(dir) where chosen[name] == nil {
                chosen[name] = .some(masked ? nil : dir + "/" + name)
            }
        }
        return chosen.keys.sorted().compactMap { chosen[$0]! }
    }

    func load() throws(ConfigError) -> Result {
        let list = files()
        if let explicitFile, !fileExists(explicitFile), !isMask(explicitFile) {
            throw ConfigError(path: explicitFile, line: nil, message: "no such file")
        }
        var problems: [ConfigError] = []
        var applied: (settings: DaemonSettings, warnings: [String])
        do {
            applied = try Self.apply(list.map { (path: $0, text: readFile($0)) })
        } catch {
            // The apps' files are still checked, so that one pass reports every problem.
            applied = (DaemonSettings(), [])
            problems = [error] + error.others
            problems[0].others = []
        }
        applied.settings.apps = loadApps(problems: &problems, warnings: &applied.warnings)
        let routes = RouteTable.build(applied.settings.apps)
        applied.settings.routes = routes.table
        problems += routes.problems
        if var first = problems.first {
            first.others = Array(problems.dropFirst())
            throw first
        }
        return Result(settings: applied.settings, files: list + appFiles().flatMap(\.files), warnings: applied.warnings)
    }

    /// The part of `load()` that touches no file: applies the files' texts (or the failure to
    /// read one) in order over the defaults. Separate so that it can be tested and fuzzed on
    /// texts alone.
    /// A file read and parsed, or nil with its problem added: what it says is then ignored.
    static func parsed(_ path: String, _ read: Swift.Result<String, ReadFailure>, problems: inout [ConfigError]) -> ConfigFile? {
        switch read {
        case .failure(let failure):
            problems.append(ConfigError(path: path, line: nil, message: failure.message))
            return nil
        case .success(let text):
            do {
                return try ConfigFile.parse(path: path, text: text)
            } catch {
                problems.append(error)
                return nil
            }
        }
    }

    static func apply(_ sources: [(path: String, text: Swift.Result<String, ReadFailure>)])
        throws(ConfigError) -> (settings: DaemonSettings, warnings: [String]) {
        var settings = DaemonSettings()
        var warnings: [String] = []
        // Every problem is collected (a bad value leaves its default in place and the pass goes
        // on), so that a check reports them all at once.
        var problems: [ConfigError] = []
        // Where each key was last set: index into `sources` (the order files are applied), line.
        var origins: [String: (file: Int, line: Int)] = [:]
        for (index, (path, read)) in sources.enumerated() {
            guard let file = parsed(path, read, problems: &problems) else { continue }
            for a in file.assignments {
                var found = SettingKey.find(section: a.section, key: a.key)
                if found == nil, let moved = SettingKey.moved["[\(a.section)] \(a.key)"] {
                    // Older files keep working; the operator is told where the key lives now.
                    found = SettingKey.find(section: moved, key: a.key)
                    warnings.append("\(path):\(a.line): \(a.key)= belongs in [\(moved)] now (it was in [\(a.section)]); applied")
                }
                guard let key = found else {
                    let known = SettingKey.all.contains { $0.section == a.section }
                    warnings.append("\(path):\(a.line): unknown \(known ? "key \"\(a.key)\" in section [\(a.section)]" : "section [\(a.section)]"), ignoring")
                    continue
                }
                if let message = key.apply(&settings, a.value) {
                    problems.append(ConfigError(path: path, line: a.line, message: "\(message) (found \"\(a.value)\")"))
                    continue
                }
                origins[key.qualifiedName] = (index, a.line)
            }
        }
        // Settings that are only valid together, reported where the last of them was set (the
        // last in the order the files were applied, not in the order of their names).
        func crossError(_ keys: [String], _ message: String) -> ConfigError {
            let origin = keys.compactMap { origins["[Pressure] " + $0] }.max { ($0.file, $0.line) < ($1.file, $1.line) }
            return ConfigError(path: origin.map { sources[$0.file].path } ?? "configuration", line: origin?.line, message: message)
        }
        if !settings.watermarks.isValid {
            problems.append(crossError(["CriticalWatermark", "HighWatermark", "LowWatermark"],
                                       "watermarks must satisfy LowWatermark < HighWatermark <= CriticalWatermark"))
        }
        // A stall can grow by at most the window's length per window: a longer threshold could
        // never be reached (and the kernel refuses such a trigger with EINVAL).
        if settings.psiWarningStall > settings.psiWindow || settings.psiCriticalStall > settings.psiWindow {
            problems.append(crossError(["PSIWarningStallSec", "PSICriticalStallSec", "PSIWindowSec"],
                                       "PSIWarningStallSec= and PSICriticalStallSec= must not exceed PSIWindowSec="))
        }
        if var first = problems.first {
            first.others = Array(problems.dropFirst())
            throw first
        }
        return (settings, warnings)
    }

    func fileExists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// A link to /dev/null (or /dev/null itself): systemd's way of masking a file.
    func isMask(_ path: String) -> Bool {
        var st = stat()
        var null = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFCHR
            && stat("/dev/null", &null) == 0 && st.st_rdev == null.st_rdev
    }

    /// The `*.conf` names in `dir`, each with whether it is a mask.
    func listConfFiles(_ dir: String) -> [(name: String, masked: Bool)] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [(String, Bool)] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasSuffix(".conf"), !name.hasPrefix(".") else { continue }
            let path = dir + "/" + name
            if fileExists(path) {
                names.append((name, false))
            } else if isMask(path) {
                names.append((name, true))
            }
        }
        return names
    }

    func readFile(_ path: String) -> Swift.Result<String, ReadFailure> {
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
