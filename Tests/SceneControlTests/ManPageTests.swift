import ScenedTestSupport
import Testing
@testable import SceneControl

/// The man pages' sources cover what the code has: every scenectl command, option and exit
/// status in scenectl(1), every setting of config/scened.conf in scened.conf(5). (How they
/// render and what they refer to is checked on the installed pages, in SystemTests.)
@Suite struct ManPageTests {
    static func source(_ name: String) -> String { readTextFile(packageRoot() + "/man/" + name + ".scd") }

    @Test func scenectlPageHasEveryCommandOptionAndExitStatus() {
        let page = Self.source("scenectl.1")
        #expect(!page.isEmpty)
        for verb in Verb.all {
            #expect(page.contains("*\(verb.name)*"), "scenectl(1) does not describe '\(verb.name)'")
            for option in verb.options where verb.name != "simulate" {
                #expect(page.contains("*--\(option.long)*"), "scenectl(1) does not describe \(verb.name) --\(option.long)")
            }
        }
        for option in GlobalOptions.specs {
            #expect(page.contains("*--\(option.long)"), "scenectl(1) does not describe --\(option.long)")
            if let short = option.short { #expect(page.contains("*-\(short)*"), "scenectl(1) does not describe -\(short)") }
        }
        for status in ExitStatus.allCases {
            #expect(page.contains("\n*\(status.rawValue)*\n"), "scenectl(1) does not list exit status \(status.rawValue)")
        }
        for variable in ["SCENED_SOCKET", "SCENECTL_PAGER", "PAGER", "SCENECTL_LESS"] {
            #expect(page.contains("*\(variable)*"), "scenectl(1) does not describe $\(variable)")
        }
    }

    @Test func configurationPageHasEverySetting() {
        let page = Self.source("scened.conf.5")
        let example = readTextFile(packageRoot() + "/config/scened.conf")
        var sections: [String] = [], keys: [String] = []
        for line in example.split(separator: "\n") {
            if line.hasPrefix("[") { sections.append(String(line.dropFirst().dropLast())) }
            if line.hasPrefix("#"), let eq = line.firstIndex(of: "="), line.dropFirst().first?.isUppercase == true,
               !line.dropFirst()[..<eq].contains(" ") {
                keys.append(String(line[line.index(after: line.startIndex)..<eq]))
            }
        }
        #expect(sections.count >= 7 && keys.count >= 35, "config/scened.conf: \(sections), \(keys)")
        for section in sections { #expect(page.contains("# [\(section.uppercased())] SECTION OPTIONS"), "no [\(section)] section") }
        for key in keys { #expect(page.contains("*\(key)=*"), "scened.conf(5) does not describe \(key)=") }
        let apps = Self.source("scened.app.conf.5")
        for key in ["User", "Group"] { #expect(apps.contains("*\(key)=*"), "scened.app.conf(5) does not describe \(key)=") }
    }
}
