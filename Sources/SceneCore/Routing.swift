/// What a scene is opened with, and which scene takes it: UIKit's UIOpenURLContext and
/// NSUserActivity, handed to a new scene in willConnectTo's connection options or to a
/// connected one by openURLContexts / continueUserActivity, and UISceneActivationConditions,
/// which decide the scene. The daemon chooses the app (by URL scheme or activity type); the
/// engine chooses the scene and delivers.

/// A URL to open (UIOpenURLContext): the URL as given, and the app that opened it.
public struct URLContext: Sendable, Equatable {
    /// An absolute URL: a scheme, ":", the rest (validated by the daemon).
    public var url: String
    /// UIOpenURLContext.options.sourceApplication: the app that asked (io.scened.App Open or
    /// RequestSceneSessionActivation); nil when a person or the desktop opened it.
    public var sourceApplication: AppID?

    public init(url: String, sourceApplication: AppID? = nil) {
        self.url = url
        self.sourceApplication = sourceApplication
    }

    /// The URL's scheme, lowercased (schemes are case-insensitive), or nil if it has none.
    public var scheme: String? { URLContext.scheme(of: url) }

    /// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) followed by ":".
    public static func scheme(of url: String) -> String? {
        guard let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let bytes = url.utf8[url.utf8.startIndex..<colon]
        guard let first = bytes.first, isAlpha(first) else { return nil }
        for b in bytes where !(isAlpha(b) || (b >= 0x30 && b <= 0x39) || b == 0x2B || b == 0x2D || b == 0x2E) {
            return nil
        }
        return String(decoding: bytes, as: UTF8.self).lowercased()
    }

    private static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
}

/// An activity to continue (NSUserActivity): handoff, a notification's content, an app asking
/// another to carry on.
public struct UserActivity: Sendable, Equatable {
    /// Reverse-DNS, as in the app's [App] ActivityTypes=.
    public var activityType: String
    public var title: String?
    /// A JSON object's text, or nil.
    public var userInfo: String?
    /// Matched against the scenes' activation conditions.
    public var targetContentIdentifier: String?
    public var webpageURL: String?

    public init(activityType: String, title: String? = nil, userInfo: String? = nil,
                targetContentIdentifier: String? = nil, webpageURL: String? = nil) {
        self.activityType = activityType
        self.title = title
        self.userInfo = userInfo
        self.targetContentIdentifier = targetContentIdentifier
        self.webpageURL = webpageURL
    }
}

/// What one Open hands a scene: URLs, activities, or both (UIScene.ConnectionOptions'
/// urlContexts and userActivities).
public struct OpenPayload: Sendable, Equatable {
    public var urlContexts: [URLContext]
    public var userActivities: [UserActivity]

    public init(urlContexts: [URLContext] = [], userActivities: [UserActivity] = []) {
        self.urlContexts = urlContexts
        self.userActivities = userActivities
    }

    public var isEmpty: Bool { urlContexts.isEmpty && userActivities.isEmpty }

    /// The bytes of its texts: what limits and memory accounting count.
    public var byteCount: Int {
        var n = 0
        for c in urlContexts { n += c.url.utf8.count + (c.sourceApplication?.rawValue.utf8.count ?? 0) }
        for a in userActivities {
            n += a.activityType.utf8.count + (a.title?.utf8.count ?? 0) + (a.userInfo?.utf8.count ?? 0)
                + (a.targetContentIdentifier?.utf8.count ?? 0) + (a.webpageURL?.utf8.count ?? 0)
        }
        return n
    }

    /// What activation conditions are matched against: a URL's whole text (as UIKit does for
    /// URLs), else the first activity's targetContentIdentifier; nil when there is none.
    public var targetContentIdentifier: String? {
        urlContexts.first?.url ?? userActivities.first?.targetContentIdentifier
    }
}

/// UISceneActivationConditions of a connected scene. Patterns match a whole target content
/// identifier; "*" stands for any run of characters (none included), "?" for one; everything
/// else matches itself.
public struct ActivationConditions: Sendable, Equatable {
    /// canActivateForTargetContentIdentifierPredicate: nil is UIKit's default (any).
    public var canActivateFor: [String]?
    /// prefersToActivateForTargetContentIdentifierPredicate: empty is UIKit's default (none).
    public var prefersToActivateFor: [String]

    public init(canActivateFor: [String]? = nil, prefersToActivateFor: [String] = []) {
        self.canActivateFor = canActivateFor
        self.prefersToActivateFor = prefersToActivateFor
    }

    public static let `default` = ActivationConditions()
}

/// An Open accepted for an app that is not running: stored until the app launches, then
/// delivered in the launch's batch ("o12").
public struct OpenID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let number: UInt64
    public init(_ number: UInt64) { self.number = number }
    public init?(parsing text: String) {
        guard text.first == "o", let n = UInt64(text.dropFirst()), n > 0 else { return nil }
        number = n
    }
    public var description: String { "o\(number)" }
    public static func < (a: OpenID, b: OpenID) -> Bool { a.number < b.number }
}

/// Open a URL or continue an activity in one of the app's scenes.
public struct OpenRequest: Sendable, Equatable {
    public var app: AppID
    /// The scene to open it in; nil: the engine chooses by activation conditions, or connects a
    /// new scene.
    public var session: SessionID?
    public var payload: OpenPayload
    /// Bring the scene to foregroundActive first (UIKit opens URLs in the foreground).
    public var activate: Bool
    /// For a new scene.
    public var role: SessionRole
    public var configurationName: String

    public init(app: AppID, session: SessionID? = nil, payload: OpenPayload, activate: Bool = true,
                role: SessionRole = .windowApplication,
                configurationName: String = ConnectRequest.defaultConfigurationName) {
        self.app = app
        self.session = session
        self.payload = payload
        self.activate = activate
        self.role = role
        self.configurationName = configurationName
    }
}

/// An Open waiting for its app's launch (stored).
public struct PendingOpen: Sendable, Equatable {
    public let id: OpenID
    public var request: OpenRequest
    public var queuedAt: Timestamp

    public init(id: OpenID, request: OpenRequest, queuedAt: Timestamp) {
        self.id = id
        self.request = request
        self.queuedAt = queuedAt
    }
}
