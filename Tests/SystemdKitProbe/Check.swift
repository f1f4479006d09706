import Glibc
import ScenedTestSupport

/// One named check: the expectations that failed so far, in order, each with its line here.
/// `expect…` records and goes on (like swift-testing's #expect); `require…` stops the check
/// (like #require) by throwing.
final class Check {
    let name: String
    private(set) var failures: [String] = []

    init(name: String) { self.name = name }

    /// A failed expectation at `line` of the probe's source.
    func record(_ failure: String, line: UInt) {
        failures.append("line \(line): \(failure)")
    }

    /// The check ended early: a failed requirement or an error thrown out of it.
    func stopped(_ reason: String) {
        failures.append(reason)
    }

    func expect(_ condition: Bool, _ what: @autoclosure () -> String, line: UInt = #line) {
        if !condition { record(what(), line: line) }
    }

    func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: @autoclosure () -> String,
                                   line: UInt = #line) {
        if actual != expected { record("\(what()) is \(show(actual)), expected \(show(expected))", line: line) }
    }

    /// Expects `body` to throw exactly `expected`.
    func expectThrows<E: Error & Equatable>(_ expected: E, _ what: @autoclosure () -> String, line: UInt = #line,
                                            _ body: () throws -> Void) {
        do {
            try body()
            record("\(what()) did not throw, expected \(expected)", line: line)
        } catch let error as E where error == expected {
        } catch {
            record("\(what()) threw \(error), expected \(expected)", line: line)
        }
    }

    /// Expects `body` to throw an `E`.
    func expectThrows<E: Error>(_ type: E.Type, _ what: @autoclosure () -> String, line: UInt = #line,
                                _ body: () throws -> Void) {
        do {
            try body()
            record("\(what()) did not throw, expected a \(E.self)", line: line)
        } catch is E {
        } catch {
            record("\(what()) threw \(error), expected a \(E.self)", line: line)
        }
    }

    func require(_ condition: Bool, _ what: @autoclosure () -> String, line: UInt = #line) throws {
        if !condition { throw Stop(message: "line \(line): required \(what())") }
    }

    func require<T>(_ value: T?, _ what: @autoclosure () -> String, line: UInt = #line) throws -> T {
        guard let value else { throw Stop(message: "line \(line): required \(what()), got nil") }
        return value
    }

    /// Ends a check at a failed requirement.
    struct Stop: Error { let message: String }
}

/// Values as Swift literals, so that strings show their quotes and escaped newlines.
func show<T>(_ value: T) -> String { String(reflecting: value) }

/// Runs checks and reports each on stdout, one line per check, written as soon as the check
/// ends (a crash later loses no earlier result):
///
///     ok NAME
///     fail NAME: REASON; REASON; …
///
/// Nothing else goes to stdout; diagnostics go to stderr.
final class CheckRunner {
    private(set) var failed = 0

    func run(_ name: String, _ body: (Check) throws -> Void) {
        let check = Check(name: name)
        do {
            try body(check)
        } catch let stop as Check.Stop {
            check.stopped(stop.message)
        } catch {
            check.stopped("threw \(error)")
        }
        if check.failures.isEmpty {
            emit("ok \(name)")
        } else {
            failed += 1
            emit("fail \(name): " + check.failures.joined(separator: "; "))
        }
    }

    /// One line to stdout in one write(2), newlines inside it escaped.
    private func emit(_ line: String) {
        var text = ""
        for character in line {
            switch character {
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            default: text.append(character)
            }
        }
        writeAll(1, text + "\n")
    }
}

/// Writes all of `text`; returns the bytes written (fewer on an error).
@discardableResult
func writeAll(_ fd: Int32, _ text: String) -> Int {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        offset += n
    }
    return offset
}
