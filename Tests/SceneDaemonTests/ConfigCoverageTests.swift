import ScenedTestSupport
import Testing
@testable import SceneDaemon

/// config/scened.conf, the documented configuration.
private let shippedConfigPath = repositoryRoot + "/config/scened.conf"

/// A `#Key=value` line of the shipped file, in its section.
private struct DocumentedKey {
    var section: String
    var key: String
    var value: String
    var line: Int
    var qualifiedName: String { "[\(section)] \(key)" }
}

/// The commented-out assignments: "#" directly followed by a key name (letters), "=", a value.
/// Prose comments ("# The Varlink socket ...", "#  This file ...") have a space after "#".
private func documentedKeys(_ text: String) -> (keys: [DocumentedKey], sections: [String]) {
    var keys: [DocumentedKey] = []
    var sections: [String] = []
    var section = ""
    for (index, raw) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let line = String(String.UnicodeScalarView(raw))
        if line.hasPrefix("["), line.hasSuffix("]") {
            section = String(line.dropFirst().dropLast())
            sections.append(section)
            continue
        }
        guard line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else { continue }
        let name = line[line.index(after: line.startIndex)..<eq]
        guard let first = name.first, first.isUppercase, name.allSatisfy({ $0.isLetter && $0.isASCII }) else { continue }
        keys.append(DocumentedKey(section: section, key: String(name), value: String(line[line.index(after: eq)...]),
                                  line: index + 1))
    }
    return (keys, sections)
}

@Suite("config/scened.conf documents every setting")
struct ConfigCoverageTests {
    @Test("every key appears as #Key=default in its section, and every documented key exists")
    func coverage() throws {
        let text = try readExistingTextFile(shippedConfigPath)
        let (documented, sections) = documentedKeys(text)
        let defaults = DaemonSettings()

        for key in SettingKey.all {
            let matches = documented.filter { $0.key == key.key }
            #expect(matches.count == 1, "\(key.qualifiedName): documented \(matches.count) times in \(shippedConfigPath)")
            guard let doc = matches.first else { continue }
            #expect(doc.section == key.section,
                    "\(shippedConfigPath):\(doc.line): \(key.key)= is documented in [\(doc.section)], belongs in [\(key.section)]")
            #expect(doc.value == key.show(defaults),
                    "\(shippedConfigPath):\(doc.line): #\(key.key)=\(doc.value), but the default is \"\(key.show(defaults))\"")
        }
        for doc in documented {
            #expect(SettingKey.find(section: doc.section, key: doc.key) != nil,
                    "\(shippedConfigPath):\(doc.line): documents \(doc.qualifiedName), which is not a setting")
        }
        let knownSections = Set(SettingKey.all.map(\.section))
        for section in sections { #expect(knownSections.contains(section), "unknown section [\(section)]") }
        #expect(Set(sections) == knownSections)
    }

    @Test("the shipped file as installed changes nothing, and uncommented it states the defaults")
    func shippedFileLoads() throws {
        let text = try readExistingTextFile(shippedConfigPath)
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let installed = try dir.write("usr/lib/scened/scened.conf", text)
        var loader = ConfigLoader()
        loader.root = dir.path
        let asShipped = try loader.load()
        #expect(asShipped.files == [installed])
        #expect(asShipped.warnings.isEmpty)
        #expect(asShipped.settings == DaemonSettings())

        // Every "#Key=default" line made live: still valid, still the defaults, no warnings.
        var lines: [String] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = String(raw)
            if line.hasPrefix("#"), let second = line.dropFirst().first, second.isUppercase, line.contains("=") {
                line.removeFirst()
            }
            lines.append(line)
        }
        try dir.write("usr/lib/scened/scened.conf", lines.joined(separator: "\n"))
        let uncommented = try loader.load()
        #expect(uncommented.warnings.isEmpty)
        #expect(uncommented.settings == DaemonSettings())
        let assignments = try ConfigFile.parse(path: installed, text: lines.joined(separator: "\n")).assignments
        #expect(assignments.count == SettingKey.all.count)
    }
}
