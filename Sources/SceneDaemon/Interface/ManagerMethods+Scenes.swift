import SceneCore
import Varlink

/// The handlers of the scene and session methods.
extension MethodDispatcher {
    func connect(_ c: MethodCall) throws(VarlinkError) {
        let p = c.p
        var request = ConnectRequest(app: try p.app())
        if let role = try p.enumValue("role", SessionRole.init(name:)) { request.role = role }
        if let name = p.string("configuration") { request.configurationName = name }
        if let info = try p.objectText("userInfo") { request.userInfo = UserInfo(json: try checkedUserInfo(info)) }
        try checkSessionQuota(request.app)
        if let bytes = try p.count("footprint") { request.footprint = bytes }
        if let background = p.bool("background") { request.background = background }
        if let flag = p.bool("protected") { request.isProtected = flag }
        if let cost = try p.count32("restoreCostMs") { request.restoreCostMs = cost }
        let (result, events) = try run(.connect(request))
        guard case .session(let id) = result else { return }
        try replySessionAndEvents(id, events, c)
    }

    func activate(_ c: MethodCall) throws(VarlinkError) { try runOnSession(try c.p.session(), c) { .activate($0) } }
    func deactivate(_ c: MethodCall) throws(VarlinkError) { try runOnSession(try c.p.session(), c) { .deactivate($0) } }
    func background(_ c: MethodCall) throws(VarlinkError) { try runOnSession(try c.p.session(), c) { .background($0) } }

    func disconnect(_ c: MethodCall) throws(VarlinkError) {
        try runOnSession(try c.p.session(), c) { .disconnect($0, cause: .request) }
    }

    func discard(_ c: MethodCall) throws(VarlinkError) {
        try runReplyingEvents(.discard(try c.p.session(), cause: .request), c)
    }

    func saveState(_ c: MethodCall) throws(VarlinkError) {
        let id = try c.p.session()
        _ = try run(.saveState(id, try checkedRestoration(try c.p.restoration("restoration"))))
        try replySession(id, c)
    }

    func saveUserInfo(_ c: MethodCall) throws(VarlinkError) {
        let id = try c.p.session()
        guard let text = try c.p.objectText("userInfo") else { throw .invalidParameter("userInfo") }
        _ = try run(.saveUserInfo(id, UserInfo(json: try checkedUserInfo(text))))
        try replySession(id, c)
    }

    func setFootprint(_ c: MethodCall) throws(VarlinkError) {
        let id = try c.p.session()
        guard let bytes = try c.p.count("footprint") else { throw .invalidParameter("footprint") }
        _ = try run(.setFootprint(id, bytes))
        try replySession(id, c)
    }

    func setProtected(_ c: MethodCall) throws(VarlinkError) {
        let id = try c.p.session()
        guard let flag = c.p.bool("protected") else { throw .invalidParameter("protected") }
        _ = try run(.setProtected(id, flag))
        try replySession(id, c)
    }

    /// A scene change on one session: the reply carries the session as it now is.
    private func runOnSession(_ id: SessionID, _ c: MethodCall, _ command: (SessionID) -> Command) throws(VarlinkError) {
        let (_, events) = try run(command(id))
        try replySessionAndEvents(id, events, c)
    }
}
