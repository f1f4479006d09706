import SceneCore
import Varlink

extension Verb {
    static let pressurePlan = Verb(
        "pressure plan", section: .daemon, synopsis: "[--level warning|critical] [-n N]",
        summary: "Show the reclaim controller's ranking of victims and its next plan, without acting",
        details: """
            Why this victim? The candidates best first, with the parts of each score — how often it \
            is used, its restore cost against the mean, the bytes it would free, how long it has \
            been in the background — then the steps the controller would take now and the usage \
            they would leave. At no pressure the plan shown is the one a warning would bring; \
            --level shows another level's. Protected and foreground scenes are never candidates.
            """,
        options: [OptionSpec("level", value: "LEVEL", "Plan for warning or critical instead of the current level"),
                  OptionSpec("limit", short: "n", value: "N", "List at most N candidates (default 20)")],
        run: { invocation in
            var parameters: JSONObject = [:]
            if let level = invocation.options.value("level") {
                parameters["level"] = .string(try Check.oneOf(level, ["warning", "critical"], option: "--level"))
            }
            if let n = invocation.options.value("limit") { parameters["limit"] = .int(try Check.count(n, option: "-n")) }
            let reply = try invocation.call("GetReclaimPlan", parameters)
            if invocation.global.json { return try invocation.json(reply) }
            try invocation.write(planText(reply.object("plan") ?? [:], legend: !invocation.global.noLegend))
        })

    static func planText(_ plan: JSONObject, legend: Bool) -> String {
        let int = { (key: String) in plan.integer(key) ?? 0 }
        let level = plan.text("level") ?? "?"
        let current = plan.text("currentLevel") ?? "?"
        var out = ""
        if legend {
            let now = current == level ? "now" : "if pressure were \(level) (it is \(current))"
            out += "Reclaim plan \(now): \(ByteSize.format(int("usage"))) of \(ByteSize.format(int("budget"))) budget, low watermark \(ByteSize.format(int("lowWatermark")))\n\n"
        }
        var table = Table([.init("RANK", right: true), .init("VICTIM"), .init("APP"), .init("TIER", right: true),
                           .init("SCORE", right: true), .init("USES", right: true), .init("RESTORE", right: true),
                           .init("FREES", right: true), .init("IN BG", right: true), .init("REASON")],
                          footer: candidatesFooter(plan))
        for c in plan.objects("candidates") {
            let double = { (key: String) in c[key]?.doubleValue ?? Double(c.integer(key) ?? 0) }
            table.append([
                String(c.integer("rank") ?? 0), c.text("session") ?? "process", c.text("app") ?? "?",
                String(c.integer("tier") ?? 0), scientific(double("score")), oneDecimal(double("uses")),
                c.text("session") == nil ? "-" : "\(Int(double("restoreCostMs").rounded()))ms",
                ByteSize.format(c.integer("bytes") ?? 0),
                TimeSpan(microseconds: c.integer("backgroundFor") ?? 0).approximate,
                c.text("reason") ?? "",
            ])
        }
        out += table.render(legend: legend)
        let steps = plan.objects("steps")
        if legend { out += "\n" }
        if steps.isEmpty {
            out += legend ? "Plan: nothing to do now (settling after a batch, or nothing over the low watermark).\n" : ""
        } else {
            if legend { out += "Plan:\n" }
            for (i, s) in steps.enumerated() {
                let target = s.text("session") ?? (s[ "apps"]?.arrayValue?.compactMap(\.stringValue).joined(separator: ", ") ?? "")
                out += "  \(i + 1). \(s.text("action") ?? "?") \(target) → \(ByteSize.format(s.integer("usageAfter") ?? 0)) (\(s.text("reason") ?? ""))\n"
            }
        }
        if legend {
            out += "Leaves \(ByteSize.format(int("usageAfter"))) against a target of \(ByteSize.format(int("lowWatermark")))"
            out += plan.flag("unrelievable") == true ? "; unrelievable: only foreground and protected scenes would remain.\n" : ".\n"
        }
        return out
    }

    private static func candidatesFooter(_ plan: JSONObject) -> String {
        let listed = plan.objects("candidates").count
        var text = "\(listed) candidate\(listed == 1 ? "" : "s") listed"
        if let more = plan.integer("moreCandidates"), more > 0 { text += ", \(more) more" }
        let withheld = plan.integer("withheld") ?? 0, protected = plan.integer("protected") ?? 0
        if withheld > 0 { text += "; \(withheld) young scene\(withheld == 1 ? "" : "s") held back" }
        if protected > 0 { text += "; \(protected) protected" }
        return text + "."
    }

    private static func scientific(_ value: Double) -> String {
        guard value > 0, value.isFinite else { return "0" }
        var exponent = 0
        var mantissa = value
        while mantissa >= 10 { mantissa /= 10; exponent += 1 }
        while mantissa < 1 { mantissa *= 10; exponent -= 1 }
        return "\(oneDecimal(mantissa))e\(exponent)"
    }

    private static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }
}
