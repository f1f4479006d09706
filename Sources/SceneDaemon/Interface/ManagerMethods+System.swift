import SceneCore
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

    /// The name of the user whose login sessions the app follows.
    func followedUser(_ app: AppID) -> String {
        UserDatabase.userName(system.uid(of: app))
    }
}
