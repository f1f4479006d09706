import SceneCore
import SceneInterface
import SystemdKit
import Varlink

/// BeginInterruption and EndInterruption: a shell's interruptions (R28).
extension MethodDispatcher {
    func beginInterruption(_ c: MethodCall) throws(VarlinkError) {
        guard let reason = c.p.string("reason") else { throw .invalidParameter("reason") }
        let (token, events) = try system.beginInterruption(reason: reason, owner: c.conn.number)
        reply(c) { w in
            w.field("token", token)
            w.events(self.host.pending.events[events])
        }
    }

    func endInterruption(_ c: MethodCall) throws(VarlinkError) {
        guard let token = c.p.string("token") else { throw .invalidParameter("token") }
        let events = try system.endInterruption(token)
        reply(c) { w in w.events(self.host.pending.events[events]) }
    }

    /// While scened stops, io.scened.Manager's calls that change state are refused (Stopping):
    /// the reads go on, and so do the apps' own calls (their answers are what the stop waits
    /// for) and the end of an interruption.
    func refuseWhileStopping(_ method: ManagerMethod, isApp: Bool) throws(VarlinkError) {
        if isApp || method.name == "EndInterruption" { return }
        // Open is .anyone only because its handler decides who: it changes scenes.
        if case .anyone = method.access, method.name != "Open" { return }
        var p = JSONObject()
        p["message"] = .string("scened is stopping: \(method.name) is refused until it is started again")
        throw VarlinkError(name: ManagerInterface.name + ".Stopping", parameters: p)
    }

    /// The name of the user whose login sessions the app follows.
    func followedUser(_ app: AppID) -> String {
        UserDatabase.userName(system.uid(of: app))
    }
}
