import SystemdKit

/// logind's names, and readers for the bodies of the messages scened gets from it.
enum Logind {
    static let busName = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"
    static let sessionPathPrefix = "/org/freedesktop/login1/session"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let driverName = "org.freedesktop.DBus"
    static let driverPath = "/org/freedesktop/DBus"

    /// One row of ListSessions' `a(susso)`.
    struct ListedSession: Equatable {
        var id: String
        var uid: UInt32
        var seat: String
        var path: String
    }

    static func readListSessions(_ m: BusMessage) throws(SystemdError) -> [ListedSession] {
        try m.readArray("(susso)") { (m) throws(SystemdError) in
            try m.readStruct("susso") { (m) throws(SystemdError) in
                let id = try m.readString()
                let uid = try m.readUInt32()
                _ = try m.readString()
                let seat = try m.readString()
                return ListedSession(id: id, uid: uid, seat: seat, path: try m.readObjectPath())
            }
        }
    }

    /// `(s id, o path)` of SessionNew and SessionRemoved.
    static func readSessionSignal(_ m: BusMessage) throws(SystemdError) -> (id: String, path: String) {
        (try m.readString(), try m.readObjectPath())
    }

    /// `(s name, s old, s new)` of NameOwnerChanged.
    static func readNameOwnerChanged(_ m: BusMessage) throws(SystemdError) -> (name: String, old: String, new: String) {
        (try m.readString(), try m.readString(), try m.readString())
    }

    /// The properties of a session scened follows, from GetAll's `a{sv}` or the changed set of
    /// PropertiesChanged; `id` is the `Id` property when present. Values of an unexpected
    /// type are ignored rather than trusted.
    static func readSessionProperties(_ m: BusMessage) throws(SystemdError) -> (change: LoginSessionChange, id: String?) {
        var change = LoginSessionChange()
        var id: String?
        try m.readProperties { (name, contents, m) throws(SystemdError) in
            switch (name, contents) {
            case ("Id", "s"): id = try m.readString()
            case ("Class", "s"): change.sessionClass = try m.readString()
            case ("Active", "b"): change.active = try m.readBool()
            case ("LockedHint", "b"): change.lockedHint = try m.readBool()
            case ("IdleHint", "b"): change.idleHint = try m.readBool()
            case ("Remote", "b"): change.remote = try m.readBool()
            case ("User", "(uo)"):
                change.uid = try m.readStruct("uo") { (m) throws(SystemdError) in
                    let uid = try m.readUInt32()
                    _ = try m.readObjectPath()
                    return uid
                }
            case ("Seat", "(so)"):
                change.seat = try m.readStruct("so") { (m) throws(SystemdError) in
                    let seat = try m.readString()
                    _ = try m.readObjectPath()
                    return seat
                }
            default: break
            }
        }
        return (change, id)
    }

    /// The names scened reads; an invalidation of one of them calls for a re-read.
    static let followedProperties: Set<String> = ["Class", "Active", "LockedHint", "IdleHint", "Remote", "User", "Seat"]

    /// PropertiesChanged's `(s interface, a{sv} changed, as invalidated)`, for the Session
    /// interface only (nil for another).
    static func readPropertiesChanged(_ m: BusMessage) throws(SystemdError) -> (change: LoginSessionChange, rereadNeeded: Bool)? {
        guard try m.readString() == sessionInterface else { return nil }
        let (change, _) = try readSessionProperties(m)
        let invalidated = try m.readArray("s") { (m) throws(SystemdError) in try m.readString() }
        return (change, invalidated.contains { followedProperties.contains($0) })
    }

    static func getAll(_ path: String) -> BusMethodCall {
        BusMethodCall(destination: busName, path: path, interface: propertiesInterface, member: "GetAll",
                      arguments: [.string(sessionInterface)])
    }

    static let getNameOwner = BusMethodCall(destination: driverName, path: driverPath, interface: driverName,
                                            member: "GetNameOwner", arguments: [.string(busName)])
    static let listSessions = BusMethodCall(destination: busName, path: managerPath, interface: managerInterface,
                                            member: "ListSessions")

    static func inhibit(_ kind: InhibitorKind, why: String) -> BusMethodCall {
        BusMethodCall(destination: busName, path: managerPath, interface: managerInterface, member: "Inhibit",
                      arguments: [.string(kind.rawValue), .string("scened"), .string(why), .string("delay")])
    }
}
