import Foundation
import Glibc

/// What the host must look like afterwards as before (the paths this test could plausibly
/// have touched if a mount had gone wrong).
struct HostState: Equatable {
    var entries: [String: String] = [:]

    static let watched = ["/run/systemd", "/run/user", "/run/log", "/run/scened", "/var/log/journal",
                          "/var/lib/systemd/catalog", "/usr/lib/systemd/catalog"]

    static func capture() -> HostState {
        var state = HostState()
        let fm = FileManager.default
        for dir in watched {
            guard let names = try? fm.contentsOfDirectory(atPath: dir) else {
                state.entries[dir] = "(absent)"
                continue
            }
            for name in names {
                let path = dir + "/" + name
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                // Directories by existence; files by size and modification time.
                state.entries[path] = (st.st_mode & S_IFMT) == S_IFDIR ? "dir"
                    : "\(st.st_size)@\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
            }
        }
        return state
    }

    func differences(from before: HostState) -> [String] {
        var out: [String] = []
        for (path, value) in entries.sorted(by: { $0.key < $1.key }) where before.entries[path] != value {
            out.append("\(path): \(before.entries[path] ?? "(absent)") -> \(value)")
        }
        for path in before.entries.keys.sorted() where entries[path] == nil {
            out.append("\(path) disappeared")
        }
        return out
    }
}
