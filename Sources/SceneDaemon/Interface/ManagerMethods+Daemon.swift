import SceneCore
import SceneInterface
import Varlink

/// The handlers of the daemon-wide methods (administrators only).
extension ManagerVarlink {
    func setPressure(_ c: MethodCall) throws(VarlinkError) {
        guard let level = try c.p.enumValue("level", PressureLevel.init(name:)) else { throw .invalidParameter("level") }
        var duration: Int64?
        if let d = try c.p.count("duration") {
            guard d > 0, d <= UInt64(Int64.max / 2) else { throw .invalidParameter("duration") }
            duration = Int64(d)
        }
        daemon?.setPressureOverride(level, duration: duration)
        reply(c) { w in self.writePressure(&w) }
    }

    func clearPressure(_ c: MethodCall) throws(VarlinkError) {
        daemon?.setPressureOverride(nil, duration: nil)
        reply(c) { w in self.writePressure(&w) }
    }

    func reload(_ c: MethodCall) throws(VarlinkError) {
        guard let daemon else { throw .methodNotImplemented(c.call.method) }
        switch daemon.reload() {
        case .success(let files):
            reply(c) { w in
                w.key("configFiles")
                w.beginArray()
                for f in files { w.string(f) }
                w.endArray()
            }
        case .failure(let error):
            var e = JSONObject()
            e["file"] = .string(error.path)
            if let line = error.line { e["line"] = .int(Int64(line)) }
            e["message"] = .string(error.report)
            throw VarlinkError(name: ManagerInterface.name + ".ConfigurationError", parameters: e)
        }
    }
}
