import Testing
import Varlink
@testable import SceneControl

/// The exposition writer and the GetMetrics rendering, without a daemon.
@Suite struct OpenMetricsTests {
    @Test func labelAndHelpEscaping() {
        #expect(OpenMetricsWriter.escapeLabel(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
        #expect(OpenMetricsWriter.escapeHelp(#"back\slash"# + "\nnext") == #"back\\slash\nnext"#)
        var w = OpenMetricsWriter()
        w.family("scened_x", .gauge, help: "Line one\nline two")
        w.sample("scened_x", labels: ["app": "com.\"odd\"\\app"], 3)
        #expect(w.finish() == """
            # TYPE scened_x gauge
            # HELP scened_x Line one\\nline two
            scened_x{app="com.\\"odd\\"\\\\app"} 3
            # EOF

            """)
    }

    @Test func countersByFlavour() {
        var open = OpenMetricsWriter(flavor: .openMetrics)
        open.family("scened_commits", .counter, help: "Commits.", unit: nil)
        open.sample("scened_commits_total", 7)
        let openText = open.finish()
        #expect(openText.contains("# TYPE scened_commits counter\n") && openText.contains("scened_commits_total 7\n"))
        #expect(openText.hasSuffix("# EOF\n"))

        var prom = OpenMetricsWriter(flavor: .prometheus)
        prom.family("scened_freed_bytes", .counter, help: "Freed.", unit: "bytes")
        prom.sample("scened_freed_bytes_total", 9)
        let promText = prom.finish()
        #expect(promText.contains("# TYPE scened_freed_bytes_total counter\n"))
        #expect(!promText.contains("# UNIT") && !promText.contains("# EOF"))
    }

    @Test func histogramBucketsAreCumulative() {
        var w = OpenMetricsWriter()
        w.histogram("scened_pass_seconds", help: "Passes.", bounds: [100, 1_000, 10_000], counts: [5, 0, 2], overflow: 1,
                    sumMicroseconds: 25_000)
        let lines = w.finish().split(separator: "\n").map(String.init)
        #expect(lines == [
            "# TYPE scened_pass_seconds histogram",
            "# UNIT scened_pass_seconds seconds",
            "# HELP scened_pass_seconds Passes.",
            #"scened_pass_seconds_bucket{le="0.0001"} 5"#,
            #"scened_pass_seconds_bucket{le="0.001"} 5"#,
            #"scened_pass_seconds_bucket{le="0.01"} 7"#,
            #"scened_pass_seconds_bucket{le="+Inf"} 8"#,
            "scened_pass_seconds_sum 0.025",
            "scened_pass_seconds_count 8",
            "# EOF",
        ])
    }

    @Test func renderedReply() {
        let reply: JSONObject = [
            "uptime": 2_500_000, "pressure": "warning", "usage": 10, "budget": 100, "episodes": 2,
            "sessions": [["condition": "live", "state": "background", "count": 4]],
            "apps": [["process": "running", "count": 1]],
            "reclaims": [["action": "disconnect", "count": 3, "bytesFreed": 300]],
            "grace": ["pending": 0, "notices": 1, "acks": 1, "deferrals": 0, "timeouts": 0],
            "terminations": [["reason": "hung", "count": 2]],
            "passLatency": ["bounds": [100], "counts": [1], "overflow": 0, "sum": 50, "count": 1],
        ]
        let text = MetricsText.render(reply, flavor: .openMetrics)
        for line in ["scened_uptime_seconds 2.5", #"scened_sessions{condition="live",state="background"} 4"#,
                     #"scened_pressure_level{level="warning"} 1"#, #"scened_pressure_level{level="normal"} 0"#,
                     #"scened_reclaim_freed_bytes_total{action="disconnect"} 300"#,
                     #"scened_deadlines_missed_total{deadline="callback"} 2"#, "scened_pressure_episodes_total 2"] {
            #expect(text.contains(line + "\n"), "missing \(line)")
        }
        // Every family is declared once, before its samples; every sample name starts scened_.
        var declared: [String] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") { declared.append(String(line.split(separator: " ")[2])) }
            if !line.hasPrefix("#") {
                #expect(line.hasPrefix("scened_"))
                #expect(declared.contains { line.hasPrefix($0) }, "\(line) before its TYPE")
            }
        }
        #expect(Set(declared).count == declared.count)
        #expect(text.hasSuffix("# EOF\n"))
    }
}
