import Glibc
import ScenedTestSupport
import Testing
import Varlink

/// `scenectl metrics` against a real daemon with apps and sessions, written as the timer
/// writes it into a real prometheus-node-exporter's textfile directory, and read back over
/// HTTP from that exporter as Prometheus would scrape it.
@Suite("scenectl metrics through node-exporter", .timeLimit(.minutes(2)))
struct MetricsScrapeTests {
    @Test("the scened_ series node-exporter serves match the daemon's state; counters only grow")
    func scrapeThroughNodeExporter() throws {
        let exporter = try SystemTools.require("prometheus-node-exporter", for: "the metrics scrape test (packaging/dev-deps)")
        let workspace = try Workspace()
        let daemon = try DaemonProcess(workspace)
        let ctl = SceneCtlDriver(socketPath: workspace.socketPath, directory: workspace.path)
        for i in 1...3 { _ = try ctl.ctl(["connect", "com.example.metrics\(i)", "--background", "--footprint", "300M"]) }
        _ = try ctl.ctl(["connect", "com.example.front"])
        _ = try ctl.ctl(["pressure", "set", "critical", "--for", "2s"])
        let reclaimed = try waitUntil(seconds: 10) {
            let m = try daemon.call("GetMetrics")["metrics"]?.objectValue ?? [:]
            return (m["reclaims"]?.arrayValue ?? []).contains {
                $0["action"]?.stringValue == "disconnect" && ($0["count"]?.intValue ?? 0) > 0
            }
        }
        #expect(reclaimed, "no reclaim disconnect counted")

        let textfiles = workspace.path + "/textfiles"
        #expect(mkdir(textfiles, 0o755) == 0)
        try Self.writeMetrics(workspace, into: textfiles)
        let port = try Self.freePort()
        let node = try ChildProcess([exporter, "--collector.disable-defaults", "--collector.textfile",
                                     "--collector.textfile.directory=" + textfiles,
                                     "--web.listen-address=127.0.0.1:\(port)"],
                                    directory: workspace.path, label: "node-exporter")
        defer { node.killNow() }
        var body = ""
        _ = waitUntil(seconds: 15) {
            body = (try? Self.httpGet(port: port, path: "/metrics")) ?? ""
            return body.contains("scened_") || !node.isRunning
        }
        let first = Scrape(body)
        #expect(first.values["node_textfile_scrape_error"] == 0, "the collector could not read the file:\n\(node.stderr)")

        // Against the daemon's own answers.
        let status = try daemon.call("GetStatus")["status"]?.objectValue ?? [:]
        let sessions = status["sessions"]?.objectValue ?? [:]
        let live = first.sum("scened_sessions", where: #"condition="live""#)
        let archived = first.sum("scened_sessions", where: #"condition="archived""#)
        #expect(live == Double(sessions["live"]?.intValue ?? -1) && archived == Double(sessions["archived"]?.intValue ?? -1),
                "sessions live \(live) archived \(archived), status \(sessions)\n\(body)")
        #expect(first.values[#"scened_sessions{condition="live",state="foregroundActive"}"#] == 1)
        #expect(first.sum("scened_apps", where: "") == Double(status["apps"]?.intValue ?? -1))
        #expect(first.values["scened_memory_budget_bytes"] == Double(status["budget"]?.intValue ?? -1))
        #expect((first.values[#"scened_reclaim_actions_total{action="disconnect"}"#] ?? 0) >= 1)
        #expect((first.values[#"scened_reclaim_freed_bytes_total{action="disconnect"}"#] ?? 0) >= Double(300 << 20))
        #expect((first.values["scened_pressure_episodes_total"] ?? 0) >= 1)
        #expect((first.values[#"scened_events_total{event="willConnectTo"}"#] ?? 0) >= 4)
        // Typed as Prometheus reads them: counters under their _total name, a real histogram.
        #expect(first.types["scened_commits_total"] == "counter" && first.types["scened_reclaim_actions_total"] == "counter")
        #expect(first.types["scened_loop_pass_duration_seconds"] == "histogram")
        #expect(first.types["scened_sessions"] == "gauge")
        let buckets = first.series("scened_loop_pass_duration_seconds_bucket")
        #expect(buckets.count == 14 && buckets.map(\.value) == buckets.map(\.value).sorted(), "buckets not cumulative: \(buckets)")
        #expect(buckets.last?.value == first.values["scened_loop_pass_duration_seconds_count"] && (buckets.last?.value ?? 0) > 0)

        // More work, a new file: every counter is at least what it was; commits grew.
        for i in 4...5 { _ = try ctl.ctl(["connect", "com.example.metrics\(i)", "--background"]) }
        try Self.writeMetrics(workspace, into: textfiles)
        var second = first
        _ = waitUntil(seconds: 10) {
            second = Scrape((try? Self.httpGet(port: port, path: "/metrics")) ?? "")
            return (second.values["scened_commits_total"] ?? 0) > (first.values["scened_commits_total"] ?? 0)
        }
        #expect((second.values["scened_commits_total"] ?? 0) > (first.values["scened_commits_total"] ?? 0))
        // The session counts follow the change (they are kept between events, not beyond).
        #expect(second.sum("scened_sessions", where: #"condition="live""#) == live + 2)
        for (key, value) in first.values where key.hasPrefix("scened_") && key.contains("_total") {
            #expect((second.values[key] ?? -1) >= value, "\(key) went from \(value) to \(second.values[key] ?? -1)")
        }
        _ = daemon
    }

    @Test("with the daemon gone, scenectl metrics fails and the unit's script removes the old file")
    func daemonGone() throws {
        let workspace = try Workspace()
        let result = try run([Binaries.scenectl, "--socket", workspace.socketPath, "metrics"],
                             environment: ["SCENED_SOCKET": nil], in: workspace.path)
        #expect(result.status != 0 && !result.stdout.contains("scened_"), "\(result.summary)")
        let textfiles = workspace.path + "/textfiles"
        #expect(mkdir(textfiles, 0o755) == 0)
        try writeTextFile(textfiles + "/scened.prom", "scened_uptime_seconds 1\n")
        let script = try run(["/bin/sh", "-c", try Self.unitScript(workspace, textfiles)], in: workspace.path)
        #expect(script.status != 0, "\(script.summary)")
        #expect(access(textfiles + "/scened.prom", F_OK) != 0 && access(textfiles + "/.scened.prom.tmp", F_OK) != 0,
                "a stale or partial file is left for node-exporter")
    }

    /// Runs scened-metrics.service's own ExecStart= script, as systemd would hand it to the
    /// shell ($$ → $), with the textfile directory and scenectl's socket pointed at the test's.
    static func writeMetrics(_ workspace: Workspace, into directory: String) throws {
        let result = try run(["/bin/sh", "-c", try unitScript(workspace, directory)], in: workspace.path)
        guard result.status == 0 else { throw TestFailure("scened-metrics.service's script failed: \(result.summary)") }
    }

    static func unitScript(_ workspace: Workspace, _ directory: String, _ file: String = #filePath) throws -> String {
        var root = file
        for _ in 0..<3 { root = String(root[..<(root.lastIndex(of: "/") ?? root.startIndex)]) }
        let unit = readTextFile(root + "/systemd/scened-metrics.service")
        // ExecStart= with its continuation lines, then the single-quoted script.
        var command = ""
        var inExec = false
        for line in unit.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("ExecStart=") { inExec = true }
            guard inExec else { continue }
            command += line.hasSuffix("\\") ? String(line.dropLast()) : String(line)
            if !line.hasSuffix("\\") { break }
        }
        guard let open = command.firstIndex(of: "'"), let close = command.lastIndex(of: "'"), open < close else {
            throw TestFailure("no /bin/sh -c '…' in scened-metrics.service's ExecStart=: \(command)")
        }
        var script = String(command[command.index(after: open)..<close])
        // systemd expands $NAME itself: every $ meant for the shell must be doubled.
        #expect(!script.replacing("$$", with: "").contains("$"), "a single $ in ExecStart= (systemd would expand it): \(script)")
        script = script.replacing("$$", with: "$")
        script = script.replacing("/var/lib/prometheus/node-exporter", with: directory)
        script = script.replacing("/usr/bin/scenectl", with: Binaries.scenectl + " --socket " + workspace.socketPath)
        return script
    }

    /// A loopback port nobody listens on now (bound to port 0, then released).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestFailure("no free loopback port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// HTTP/1.0 GET on loopback, the body of a 200 answer; bounded by a 5 s socket timeout.
    static func httpGet(port: UInt16, path: String) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw TestFailure("connect to 127.0.0.1:\(port) failed") }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { throw TestFailure("send failed") }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while response.count < 16 << 20 {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response += buffer[..<n]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.") && text.split(separator: "\r\n").first?.contains(" 200 ") == true,
              let split = text.firstRange(of: "\r\n\r\n") else { throw TestFailure("bad HTTP answer: \(text.prefix(200))") }
        return String(text[split.upperBound...])
    }
}

/// Text exposition as served: each series (name and labels as written) with its value, and
/// each family's TYPE.
struct Scrape {
    var values: [String: Double] = [:]
    var types: [String: String] = [:]

    init(_ text: String) {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
                continue
            }
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " ") else { continue }
            let value = line[line.index(after: space)...]
            values[String(line[..<space])] = value == "+Inf" ? .infinity : Double(value)
        }
    }

    /// The series of one name, in the order served.
    func series(_ name: String) -> [(key: String, value: Double)] {
        values.filter { $0.key == name || $0.key.hasPrefix(name + "{") }
            .sorted { Self.bound($0.key) < Self.bound($1.key) }
    }

    func sum(_ name: String, where label: String) -> Double {
        series(name).filter { label.isEmpty || $0.key.contains(label) }.reduce(0) { $0 + $1.value }
    }

    /// A bucket's le as a number, for ordering buckets.
    private static func bound(_ key: String) -> Double {
        guard let start = key.firstRange(of: "le=\"") else { return 0 }
        let rest = key[start.upperBound...]
        let text = rest.prefix { $0 != "\"" }
        return text == "+Inf" ? .infinity : Double(text) ?? 0
    }
}
