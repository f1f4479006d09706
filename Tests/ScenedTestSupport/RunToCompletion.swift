import Glibc

/// What a program run to completion printed, and how it ended.
public struct Completed: Sendable {
    /// The exit status, 128+signal when a signal ended it.
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var commandLine: String

    public var summary: String {
        "`\(commandLine)` → exit \(status)\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)"
    }
}

/// Runs a program to completion and returns its exit status and output; throws if it does not
/// finish within `timeout` seconds (it is killed then). Its output files go to `directory`, or
/// to a temporary directory of their own.
public func run(_ arguments: [String], environment: [String: String?] = [:], in directory: String? = nil,
                timeout: Double = 30, stdinPath: String? = nil) throws -> Completed {
    let scratch = directory == nil ? TemporaryDirectory(prefix: "scened-run") : nil
    defer { scratch?.remove() }
    let label = "run-\(getpid())-\(monotonicNanoseconds())"
    let child = try ChildProcess(arguments, environment: environment, directory: directory ?? scratch!.path,
                                 label: label, stdinPath: stdinPath)
    defer {
        unlink(child.stdoutPath)
        unlink(child.stderrPath)
    }
    let commandLine = arguments.map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
    guard child.wait(seconds: timeout) else {
        child.killNow()
        throw TestFailure("`\(commandLine)` did not finish within \(timeout) s\n--- stdout:\n\(child.stdout)\n--- stderr:\n\(child.stderr)")
    }
    return Completed(status: child.status ?? -1, stdout: child.stdout, stderr: child.stderr, commandLine: commandLine)
}
