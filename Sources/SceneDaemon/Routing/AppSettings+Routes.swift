import SceneCore

/// `[App] URLSchemes=` and `ActivityTypes=`: lists, as systemd's list settings (an empty
/// value resets, others add), checked here and gathered across apps by `RouteTable`.
extension AppSettingKey {
    static let routeKeys: [AppSettingKey] = [
        AppSettingKey(section: "App", key: "URLSchemes", apply: { s, v in
            guard !v.isEmpty else { s.urlSchemes = []; return nil }
            for word in v.split(separator: " ") where !word.isEmpty {
                // RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ); case-insensitive.
                guard let scheme = URLContext.scheme(of: word + ":"), scheme.utf8.count == word.utf8.count else {
                    return "URLSchemes=: \"\(word)\" is not a URL scheme (a letter, then letters, digits, +, - or .; no colon)"
                }
                if !s.urlSchemes.contains(scheme) { s.urlSchemes.append(scheme) }
            }
            return nil
        }, show: { $0.urlSchemes.joined(separator: " ") }),
        AppSettingKey(section: "App", key: "ActivityTypes", apply: { s, v in
            guard !v.isEmpty else { s.activityTypes = []; return nil }
            for word in v.split(separator: " ") where !word.isEmpty {
                guard AppID.isValid(String(word)) else {
                    return "ActivityTypes=: \"\(word)\" is not an activity type (reverse-DNS, like com.example.mail.compose)"
                }
                if !s.activityTypes.contains(String(word)) { s.activityTypes.append(String(word)) }
            }
            return nil
        }, show: { $0.activityTypes.joined(separator: " ") }),
    ]
}

extension AppSettings {
    /// After `key` was applied from `path:line`: each name it listed was declared there.
    mutating func noteRouteOrigins(key: String, value: String, path: String, line: Int) {
        let kind: RouteTable.Kind
        switch key {
        case "URLSchemes": kind = .scheme
        case "ActivityTypes": kind = .activityType
        default: return
        }
        for word in value.split(separator: " ") where !word.isEmpty {
            let name = kind == .scheme ? word.lowercased() : String(word)
            routeOrigins[RouteTable.originKey(kind, name)] = RouteTable.Origin(path: path, line: line)
        }
    }
}
