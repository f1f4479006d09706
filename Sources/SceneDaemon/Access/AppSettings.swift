import SystemdKit
import SceneCore

/// One app's settings: `apps.d/APP.conf` beside the main configuration, with drop-ins in
/// `apps.d/APP.conf.d/`, found, masked and reloaded like the main file.
struct AppSettings: Equatable, Sendable {
    /// The app's owner: this user — what the app's process runs as — may act as the app.
    var user: String?
    /// Members of this group may act as the app too.
    var group: String?
    /// Resolved at load.
    var uid: UInt32?
    var gid: UInt32?
    /// `NotifyGroup=`: members may Notify the app (resolved at load).
    var notifyGroup: String?
    var notifyGID: UInt32?
    /// `BackgroundModes=`: the activities the app may declare to keep running.
    var backgroundModes: BackgroundModes = []
    /// `[Launch]`: how scened starts the app itself, if it does.
    var launch = LaunchSettings()
    /// `URLSchemes=` (lowercased) and `ActivityTypes=`: what Open routes to the app.
    var urlSchemes: [String] = []
    var activityTypes: [String] = []
    /// Where each was declared (`RouteTable.originKey`), for the error when two apps claim one.
    var routeOrigins: [String: RouteTable.Origin] = [:]

    var owner: AccessPolicy.AppOwner { AccessPolicy.AppOwner(uid: uid, gid: gid) }
}

/// One key of an app's file, like `SettingKey` for the main file.
struct AppSettingKey: Sendable {
    let section: String
    let key: String
    let apply: @Sendable (inout AppSettings, String) -> String?
    let show: @Sendable (AppSettings) -> String

    static let all: [AppSettingKey] = [
        AppSettingKey(section: "App", key: "User", apply: { s, v in
            guard !v.isEmpty else { s.user = nil; s.uid = nil; return nil }
            guard let uid = UserDatabase.uid(v) else { return "User=\(v): no such user" }
            s.user = v
            s.uid = uid
            return nil
        }, show: { $0.user ?? "" }),
        AppSettingKey(section: "App", key: "Group", apply: { s, v in
            guard !v.isEmpty else { s.group = nil; s.gid = nil; return nil }
            guard let gid = UserDatabase.gid(v) else { return "Group=\(v): no such group" }
            s.group = v
            s.gid = gid
            return nil
        }, show: { $0.group ?? "" }),
        AppSettingKey(section: "App", key: "NotifyGroup", apply: { s, v in
            guard !v.isEmpty else { s.notifyGroup = nil; s.notifyGID = nil; return nil }
            guard let gid = UserDatabase.gid(v) else { return "NotifyGroup=\(v): no such group" }
            s.notifyGroup = v
            s.notifyGID = gid
            return nil
        }, show: { $0.notifyGroup ?? "" }),
        AppSettingKey(section: "App", key: "BackgroundModes", apply: { s, v in
            // A list, as systemd's list settings: an empty value resets it, others add to it.
            guard !v.isEmpty else { s.backgroundModes = []; return nil }
            for word in v.split(separator: " ") where !word.isEmpty {
                guard let mode = BackgroundModes(name: String(word)) else {
                    return "BackgroundModes=: unknown mode \"\(word)\" (audio, location, voip, processing)"
                }
                s.backgroundModes.insert(mode)
            }
            return nil
        }, show: { $0.backgroundModes.description }),
    ] + routeKeys + launchKeys

    static func find(section: String, key: String) -> AppSettingKey? {
        all.first { $0.section == section && $0.key == key }
    }
}
