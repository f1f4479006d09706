import Glibc
import ScenedTestSupport

/// A tmux server of the test's own (its own socket, no configuration but remain-on-exit, so a
/// pane's last screen can be read), with one 80×24 window running a command.
/// Killed when released.
final class Tmux {
    let tmux: String
    let directory: TemporaryDirectory
    let socketName: String

    init(_ command: [String], environment: [String: String] = [:], width: Int = 80, height: Int = 24) throws {
        tmux = try SystemTools.require("tmux", for: "the terminal tests (scenectl top, the pager)")
        directory = TemporaryDirectory(prefix: "scened-tmux")
        socketName = "scened-test-\(getpid())-\(monotonicNanoseconds())"
        let config = try directory.write("tmux.conf", "set -g remain-on-exit on\nset -g status off\n")
        let exports = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.quote($0.value))" }
        let line = (["env", "TERM=xterm-256color"] + exports + command.map(Self.quote)).joined(separator: " ")
        let started = try run([tmux, "-L", socketName, "-f", config, "new-session", "-d", "-x", String(width),
                               "-y", String(height), "-s", "t", line], in: directory.path, timeout: 10)
        guard started.status == 0 else {
            directory.remove()
            throw TestFailure("tmux new-session failed:\n\(started.summary)")
        }
    }

    deinit {
        _ = try? run([tmux, "-L", socketName, "kill-server"], in: directory.path, timeout: 10)
        directory.remove()
    }

    /// The pane's screen, one string per line (trailing blanks dropped by tmux); with
    /// `history`, the lines scrolled off the top before it.
    func screen(history: Bool = false) throws -> [String] {
        let captured = try run([tmux, "-L", socketName, "capture-pane", "-p", "-t", "t"] + (history ? ["-S", "-"] : []),
                               in: directory.path, timeout: 10)
        guard captured.status == 0 else { throw TestFailure("capture-pane failed:\n\(captured.summary)") }
        var lines = captured.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// Polls the screen until `condition` holds, at most `seconds`; returns the last screen seen.
    @discardableResult
    func waitForScreen(seconds: Double = 10, history: Bool = false,
                       _ condition: ([String]) -> Bool) throws -> (held: Bool, screen: [String]) {
        var last: [String] = []
        let held = try waitUntil(seconds: seconds) {
            last = try screen(history: history)
            if condition(last) { return true }
            sleepMilliseconds(50)
            return false
        }
        return (held, last)
    }

    func send(_ keys: String...) throws {
        let sent = try run([tmux, "-L", socketName, "send-keys", "-t", "t"] + keys, in: directory.path, timeout: 10)
        guard sent.status == 0 else { throw TestFailure("send-keys failed:\n\(sent.summary)") }
    }

    static func quote(_ word: String) -> String {
        "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: Character(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
