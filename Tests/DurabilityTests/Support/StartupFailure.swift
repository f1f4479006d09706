import ScenedTestSupport
import Testing

/// What a refused start-up must look like: a non-zero exit, stderr naming the database file and
/// the problem, and systemd told why (STATUS=Failed… and ERRNO=).
struct StartupFailure {
    let status: Int32
    let stderr: String
    let statusLine: String?
    let errnoLine: String?

    /// Starts scened (expecting it to refuse) and collects how it ended.
    init(_ workspace: DaemonWorkspace, wrapper: [String] = [], stateDirectory: DaemonWorkspace.StateDirectoryOption = .workspace,
         environment: [String: String?] = [:]) throws {
        let daemon = try workspace.spawn(wrapper: wrapper, stateDirectory: stateDirectory, environment: environment)
        let notify = daemon.notify!
        _ = waitUntil(seconds: 20) { !daemon.isRunning || notify.first("READY=1") != nil }
        if daemon.isRunning {
            let started = notify.first("READY=1") != nil
            daemon.crash()
            throw TestFailure(started ? "scened started (READY=1) instead of refusing; stderr:\n\(daemon.stderr)"
                                      : "scened neither exited nor became ready within 20 s; stderr:\n\(daemon.stderr)")
        }
        status = try daemon.waitForExit(timeout: 1)
        stderr = daemon.stderr
        _ = notify.wait(for: "ERRNO=", seconds: 2)
        statusLine = notify.values(of: "STATUS").first { $0.hasPrefix("Failed") }
        errnoLine = notify.values(of: "ERRNO").first
    }

    /// Records an issue for each way the failure falls short: exit status, the file and one of
    /// `problem` in stderr and in STATUS=, an ERRNO=.
    func expectReported(file: String, problem: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status != 0, "scened exited 0 instead of refusing to start; stderr:\n\(stderr)", sourceLocation: sourceLocation)
        #expect(stderr.contains(file), "stderr does not name \(file):\n\(stderr)", sourceLocation: sourceLocation)
        #expect(problem.contains { stderr.contains($0) }, "stderr does not say \(problem.joined(separator: " or ")):\n\(stderr)",
                sourceLocation: sourceLocation)
        #expect(statusLine != nil, "no STATUS=Failed… on the notify socket; stderr:\n\(stderr)", sourceLocation: sourceLocation)
        if let statusLine {
            #expect(statusLine.contains(file) && problem.contains { statusLine.contains($0) },
                    "STATUS= does not name the file and the problem: \(statusLine)", sourceLocation: sourceLocation)
        }
        #expect(errnoLine.flatMap { Int($0) }.map { $0 > 0 } == true, "no ERRNO= with a positive errno: \(errnoLine ?? "none")",
                sourceLocation: sourceLocation)
    }
}
