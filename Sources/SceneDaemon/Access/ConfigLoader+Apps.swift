import Glibc
import SceneCore

/// The per-app files: `apps.d/APP.conf` in each configuration directory (or beside the file
/// given with --config), the first found winning, a link to /dev/null masking it, and drop-ins
/// in `apps.d/APP.conf.d/*.conf` merged by name across the directories, as for the main file.
extension ConfigLoader {
    /// Where per-app files are looked for, highest precedence first.
    var appDirectories: [String] {
        if let explicitFile {
            let dir = explicitFile.lastIndex(of: "/").map { String(explicitFile[..<$0]) } ?? "."
            return [(dir.isEmpty ? "/" : dir) + "/apps.d"]
        }
        return searchDirectories.map { $0 + "/apps.d" }
    }

    /// Each app named by a file or a drop-in directory, with its files in the order they apply.
    func appFiles() -> [(name: String, files: [String])] {
        var names = Set<String>()
        for dir in appDirectories {
            for (name, _) in listConfFiles(dir) { names.insert(String(name.dropLast(5))) }
            for name in listDirectories(dir) where name.hasSuffix(".conf.d") { names.insert(String(name.dropLast(7))) }
        }
        return names.sorted().compactMap { name in
            let candidates = appDirectories.map { $0 + "/" + name + ".conf" }
            let main = candidates.first { fileExists($0) || isMask($0) }
            if let main, isMask(main) { return nil }
            let files = (main.map { [$0] } ?? []) + dropIns(in: appDirectories.map { $0 + "/" + name + ".conf.d" })
            return files.isEmpty ? nil : (name, files)
        }
    }

    /// Reads every app's files; problems and warnings are added to the caller's.
    func loadApps(problems: inout [ConfigError], warnings: inout [String]) -> [AppID: AppSettings] {
        var apps: [AppID: AppSettings] = [:]
        for (name, files) in appFiles() {
            guard let app = AppID(name) else {
                problems.append(ConfigError(path: files[0], line: nil,
                                            message: "\"\(name)\" is not an app id (reverse-DNS, like com.example.mail); the file must be named APP.conf"))
                continue
            }
            var settings = AppSettings()
            for path in files {
                guard let file = Self.parsed(path, readFile(path), problems: &problems) else { continue }
                for a in file.assignments {
                    guard let key = AppSettingKey.find(section: a.section, key: a.key) else {
                        let known = AppSettingKey.all.contains { $0.section == a.section }
                        warnings.append("\(path):\(a.line): unknown \(known ? "key \"\(a.key)\" in section [\(a.section)]" : "section [\(a.section)]"), ignoring")
                        continue
                    }
                    if let message = key.apply(&settings, a.value) {
                        problems.append(ConfigError(path: path, line: a.line, message: message))
                    } else if a.section == "App" {
                        settings.noteRouteOrigins(key: a.key, value: a.value, path: path, line: a.line)
                    }
                }
            }
            apps[app] = settings
        }
        return apps
    }

    private func listDirectories(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            var st = stat()
            if !name.hasPrefix("."), stat(dir + "/" + name, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { names.append(name) }
        }
        return names
    }
}
