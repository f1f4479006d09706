import SceneCore

/// Who is calling, as the kernel vouches for it at connect time (SO_PEERCRED, SO_PEERGROUPS).
struct CallerIdentity: Equatable, Sendable {
    var uid: UInt32
    var gid: UInt32
    var pid: Int32
    /// Supplementary groups.
    var groups: [UInt32] = []

    func isMember(of group: UInt32) -> Bool { gid == group || groups.contains(group) }
}

/// Who may do what, in the manner of systemd's own Varlink services: the socket is open to
/// every local user and each method decides from the caller's credentials. Pure.
///
/// - administrators: root, the user the daemon runs as (a daemon started by hand serves the
///   user who started it), and members of `[Access] AdministratorGroup=` — everything;
/// - an app's owner (`User=`/`Group=` in its apps.d file): every call for that app, and only
///   for that app: what the app's own process runs as;
/// - everyone else: status, pressure and listings, without any app's private data.
struct AccessPolicy: Equatable, Sendable {
    var administratorUIDs: Set<UInt32>
    var administratorGroup: UInt32?
    var owners: [AppID: AppOwner]
    /// `[App] NotifyGroup=`: who may hand the app notifications besides administrators.
    var notifiers: [AppID: UInt32] = [:]

    struct AppOwner: Equatable, Sendable {
        var uid: UInt32?
        var gid: UInt32?
    }

    func isAdministrator(_ caller: CallerIdentity) -> Bool {
        if administratorUIDs.contains(caller.uid) { return true }
        if let group = administratorGroup, caller.isMember(of: group) { return true }
        return false
    }

    /// May act as `app`: an administrator, or its owner.
    func mayActAs(_ caller: CallerIdentity, app: AppID) -> Bool {
        if isAdministrator(caller) { return true }
        guard let owner = owners[app] else { return false }
        if let uid = owner.uid, uid == caller.uid { return true }
        if let gid = owner.gid, caller.isMember(of: gid) { return true }
        return false
    }

    /// May Notify `app`: administrators and members of its NotifyGroup= (a push relay, a
    /// fleet agent), not its owner as such: a notification wakes the app at the system's cost.
    func mayNotify(_ caller: CallerIdentity, app: AppID) -> Bool {
        if isAdministrator(caller) { return true }
        guard let gid = notifiers[app] else { return false }
        return caller.isMember(of: gid)
    }

    /// May read `app`'s private data (userInfo, state-restoration data): the same people.
    func maySeePrivateData(_ caller: CallerIdentity, app: AppID) -> Bool {
        mayActAs(caller, app: app)
    }

    /// The apps `caller` owns (not counting administrator rights).
    func ownedApps(_ caller: CallerIdentity) -> [AppID] {
        owners.compactMap { app, owner in
            (owner.uid == caller.uid || owner.gid.map(caller.isMember(of:)) == true) ? app : nil
        }.sorted()
    }
}
