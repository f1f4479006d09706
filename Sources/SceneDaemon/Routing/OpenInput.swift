import SceneCore
import SceneInterface
import Varlink

/// An Open's `url` or `activity` as a caller sent it, checked into the `OpenPayload` the
/// engine is given, with what the daemon routes by. Everything is refused here, before the
/// engine sees it: a clear error naming the parameter or the limit, nothing stored.
struct OpenInput: Equatable {
    enum Route: Equatable {
        case scheme(String)
        case activityType(String)
    }

    var payload: OpenPayload
    var route: Route

    /// Exactly one of `url` and `activity`; `source` is the app that asked (io.scened.App).
    static func parse(_ p: CallParameters, source: AppID?, _ bounds: RoutingSettings) throws(VarlinkError) -> OpenInput {
        let hasURL = p.has("url"), hasActivity = p.has("activity")
        guard hasURL != hasActivity else {
            throw invalid(hasURL ? "activity" : "url", "exactly one of url and activity")
        }
        if hasURL {
            guard let url = p.string("url") else { throw .invalidParameter("url") }
            let scheme = try checkedURL(url, "url", maxSize: bounds.maxURLSize)
            return OpenInput(payload: OpenPayload(urlContexts: [URLContext(url: url, sourceApplication: source)]),
                             route: .scheme(scheme))
        }
        guard let value = p.object["activity"] else { throw .invalidParameter("activity") }
        let activity = try userActivity(value, bounds)
        return OpenInput(payload: OpenPayload(userActivities: [activity]), route: .activityType(activity.activityType))
    }

    /// The URL's scheme (lowercased), or why the URL is refused: empty, larger than
    /// MaxURLSize=, holding a space or a control character, or without an RFC 3986 scheme.
    static func checkedURL(_ url: String, _ name: String, maxSize: Int) throws(VarlinkError) -> String {
        let size = url.utf8.count
        guard size > 0 else { throw invalid(name, "empty") }
        guard size <= maxSize else {
            throw limit("MaxURLSize", maxSize, "the URL is \(size) bytes, the most an Open may carry is \(maxSize) (MaxURLSize)")
        }
        if let bad = url.utf8.firstIndex(where: { $0 <= 0x20 || $0 == 0x7F }) {
            let offset = url.utf8.distance(from: url.utf8.startIndex, to: bad)
            throw invalid(name, "a space or control character at byte \(offset) (percent-encode it)")
        }
        guard let scheme = URLContext.scheme(of: url) else {
            throw invalid(name, "not an absolute URL: no scheme (RFC 3986: a letter, then letters, digits, +, - or ., then \":\")")
        }
        return scheme
    }

    /// io.scened's UserActivity: a reverse-DNS type, a userInfo that is an object, a
    /// webpageURL that is a URL, all of it within MaxActivitySize=.
    static func userActivity(_ value: JSONValue, _ bounds: RoutingSettings) throws(VarlinkError) -> UserActivity {
        guard case .object(let o) = value else { throw .invalidParameter("activity") }
        func text(_ key: String) throws(VarlinkError) -> String? {
            guard let v = o[key], v != .null else { return nil }
            guard let s = v.stringValue else { throw .invalidParameter("activity.\(key)") }
            return s
        }
        guard let type = try text("activityType"), AppID.isValid(type) else {
            throw invalid("activity.activityType", "not an activity type (reverse-DNS, like com.example.mail.compose)")
        }
        var activity = UserActivity(activityType: type, title: try text("title"),
                                    targetContentIdentifier: try text("targetContentIdentifier"))
        if let info = o["userInfo"], info != .null {
            guard case .object = info else { throw invalid("activity.userInfo", "must be a JSON object") }
            activity.userInfo = info.serializedString()
        }
        if let page = try text("webpageURL") {
            _ = try checkedURL(page, "activity.webpageURL", maxSize: bounds.maxURLSize)
            activity.webpageURL = page
        }
        let size = OpenPayload(userActivities: [activity]).byteCount
        guard size <= bounds.maxActivitySize else {
            throw limit("MaxActivitySize", bounds.maxActivitySize,
                        "the activity is \(size) bytes, the most an Open may carry is \(bounds.maxActivitySize) (MaxActivitySize)")
        }
        return activity
    }

    static func invalid(_ parameter: String, _ reason: String) -> VarlinkError {
        MethodDispatcher.error(for: .invalidArgument(name: parameter, reason: reason))
    }

    /// LimitExceeded for a [Routing] setting: the connection limits do not know these.
    static func limit(_ name: String, _ maximum: Int, _ message: String) -> VarlinkError {
        var p = JSONObject()
        p["limit"] = .string(name)
        p["maximum"] = .int(Int64(maximum))
        p["message"] = .string(message)
        return VarlinkError(name: ManagerInterface.name + ".LimitExceeded", parameters: p)
    }
}
