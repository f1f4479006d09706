// fuzz-modules: SceneDaemon
// The configuration: what `scened --check-config` does with files' texts (parse, apply every
// setting, cross-checks), with no file system. Errors name one of the files and a line inside
// it; an accepted configuration, dumped as --dump-config prints it, reads back as the same
// settings with no warning.
//
// Input: up to four files' texts separated by NUL bytes, applied in order (as a main file
// and its drop-ins); a text that is not UTF-8 stands for a file that could not be read.
@testable import SceneDaemon

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = inputBytes(data, size)
    let parts = bytes.split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false)
    var sources: [(path: String, text: Result<String, ConfigLoader.ReadFailure>)] = []
    var lineCounts: [String: Int] = [:]
    for (index, part) in parts.enumerated() {
        let path = "/etc/scened/scened.conf.d/\(index).conf"
        if let text = String(validating: part, as: UTF8.self) {
            sources.append((path, .success(text)))
            lineCounts[path] = part.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        } else {
            sources.append((path, .failure(ConfigLoader.ReadFailure("not valid UTF-8"))))
        }
    }

    let settings: DaemonSettings
    do {
        settings = try ConfigLoader.apply(sources).settings
    } catch {
        for problem in [error] + error.others {
            if let line = problem.line {
                require(line >= 1 && line <= (lineCounts[problem.path] ?? 0), "\(problem.path):\(line) is not a line of that file")
            } else {
                require(problem.path == "configuration" || sources.contains { $0.path == problem.path }, "error names no file: \(problem.path)")
            }
        }
        require(!error.report.isEmpty, "empty report")
        return 0
    }

    let dump = ConfigLoader.dump(settings)
    do {
        let again = try ConfigLoader.apply([("dump", .success(dump))])
        require(again.warnings.isEmpty, "the dump has unknown keys: \(again.warnings)")
        require(again.settings == settings, "the dump reads back as other settings:\n\(dump)")
    } catch {
        require(false, "the dump does not load (\(error.report)):\n\(dump)")
    }
    return 0
}
