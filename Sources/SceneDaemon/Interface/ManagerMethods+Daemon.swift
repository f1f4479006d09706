import SceneCore
import SceneInterface
import Varlink

/// The handlers of the daemon-wide methods (administrators only).
extension MethodDispatcher {
    func setPressure(_ c: MethodCall) throws(VarlinkError) {
        guard let level = try c.p.enumValue("level", PressureLevel.init(name:)) else { throw .invalidParameter("level") }
        var duration: Int64?
        if let d = try c.p.count("duration") {
            guard d > 0, d <= UInt64(Int64.max / 2) else { throw .invalidParameter("duration") }
            duration = Int64(d)
        }
        setPressureOverride(level, duration: duration)
        reply(c) { w in self.writePressure(&w) }
    }

    func clearPressure(_ c: MethodCall) throws(VarlinkError) {
        setPressureOverride(nil, duration: nil)
        reply(c) { w in self.writePressure(&w) }
    }

    /// The operator's override, evaluated now so that the reply already shows the new level.
    private func setPressureOverride(_ level: PressureLevel?, duration: Int64?) {
        if let level, level > .normal {
            let until = duration.map { host.clock.now() + TimeSpan(microseconds: $0) }
            reclaim.setOverride(PressureOverride(level: level, until: until))
        } else {
            reclaim.setOverride(nil)
        }
        request(.reclaim(reclaim.evaluate(awaitingRelease: apps.shares.awaitingRelease, takesNotice: apps.takesNotice)))
    }

    /// Loads the configuration; the daemon applies it (`DaemonRequest.apply`) before the
    /// batch holding this reply commits.
    func reload(_ c: MethodCall) throws(VarlinkError) {
        let result: ConfigLoader.Result
        do {
            result = try loader.load()
        } catch {
            request(.reloadFailed(error))
            var e = JSONObject()
            e["file"] = .string(error.path)
            if let line = error.line { e["line"] = .int(Int64(line)) }
            e["message"] = .string(error.report)
            throw VarlinkError(name: ManagerInterface.name + ".ConfigurationError", parameters: e)
        }
        request(.apply(result))
        reply(c) { w in
            w.key("configFiles")
            w.beginArray()
            for f in result.files { w.string(f) }
            w.endArray()
        }
    }
}
