import SceneCore

/// Which app handles each URL scheme and activity type: built from every app's
/// `[App] URLSchemes=` and `ActivityTypes=` at configuration load, and read by Open. Pure: a
/// name claimed by two apps is a configuration error naming both files and lines, so that the
/// daemon refuses the configuration as it refuses any other error.
struct RouteTable: Equatable, Sendable {
    enum Kind: String, Sendable, Comparable {
        case scheme
        case activityType

        static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    /// Where a scheme or type was declared.
    struct Origin: Equatable, Sendable {
        var path: String
        var line: Int

        var located: String { "\(path):\(line)" }
    }

    struct Route: Equatable, Sendable {
        var kind: Kind
        var name: String
        var app: AppID
        var origin: Origin
    }

    private(set) var schemes: [String: Route] = [:]
    private(set) var activityTypes: [String: Route] = [:]

    /// Schemes are case-insensitive (RFC 3986): looked up lowercased.
    func app(forScheme scheme: String) -> AppID? { schemes[scheme.lowercased()]?.app }

    func app(forActivityType type: String) -> AppID? { activityTypes[type]?.app }

    /// Every route, schemes first, each kind by name (ListRoutes).
    var routes: [Route] {
        (schemes.values.sorted { $0.name < $1.name }) + (activityTypes.values.sorted { $0.name < $1.name })
    }

    /// The table of the apps' declarations, and a problem for each name two apps claim
    /// (reported where the later one, in app order, declared it).
    static func build(_ apps: [AppID: AppSettings]) -> (table: RouteTable, problems: [ConfigError]) {
        var table = RouteTable()
        var problems: [ConfigError] = []
        for app in apps.keys.sorted() {
            let settings = apps[app]!
            for name in settings.urlSchemes {
                table.claim(.scheme, name, app, settings.routeOrigins[Self.originKey(.scheme, name)], into: \.schemes, &problems)
            }
            for name in settings.activityTypes {
                table.claim(.activityType, name, app, settings.routeOrigins[Self.originKey(.activityType, name)], into: \.activityTypes, &problems)
            }
        }
        return (table, problems)
    }

    /// The key of `AppSettings.routeOrigins`: a scheme and a type may be spelled alike.
    static func originKey(_ kind: Kind, _ name: String) -> String { "\(kind.rawValue) \(name)" }

    private mutating func claim(_ kind: Kind, _ name: String, _ app: AppID, _ origin: Origin?,
                                into path: WritableKeyPath<RouteTable, [String: Route]>, _ problems: inout [ConfigError]) {
        let here = origin ?? Origin(path: "apps.d/\(app).conf", line: 0)
        if let first = self[keyPath: path][name] {
            guard first.app != app else { return }
            let what = kind == .scheme ? "URL scheme \"\(name):\"" : "activity type \"\(name)\""
            problems.append(ConfigError(path: here.path, line: here.line > 0 ? here.line : nil,
                                        message: "the \(what) is claimed by both \(first.app) (\(first.origin.located)) and \(app) (\(here.located)); one app must handle it"))
            return
        }
        self[keyPath: path][name] = Route(kind: kind, name: name, app: app, origin: here)
    }
}
