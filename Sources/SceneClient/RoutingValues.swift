import Foundation
import Varlink

/// UIOpenURLContext: a URL a scene is opened with, and the app that opened it.
public struct OpenURLContext: Sendable, Hashable, CustomStringConvertible {
    /// The URL exactly as it was opened: scened accepts any absolute URL (an RFC 3986 scheme
    /// and ":"), which Foundation's URL may rewrite (it percent-encodes a space or "%zz"), so
    /// the text is kept as sent.
    public var url: String
    public var options: OpenURLOptions

    public init(url: String, options: OpenURLOptions = OpenURLOptions()) {
        self.url = url
        self.options = options
    }

    /// The URL as Foundation parses it, nil if it cannot.
    public var foundationURL: URL? { URL(string: url) }
    /// Its parts (scheme, path, query items), nil if Foundation cannot parse it.
    public var components: URLComponents? { URLComponents(string: url) }
    public var description: String { url }

    init?(wire: JSONValue) {
        guard let url = wire["url"]?.stringValue else { return nil }
        self.init(url: url, options: OpenURLOptions(sourceApplication: wire["sourceApplication"]?.stringValue))
    }
}

/// UIScene.OpenURLOptions.
public struct OpenURLOptions: Sendable, Hashable {
    /// The app that opened the URL (its Open or RequestSceneSessionActivation); nil when a
    /// person, the desktop or an operator did.
    public var sourceApplication: String?

    public init(sourceApplication: String? = nil) {
        self.sourceApplication = sourceApplication
    }
}

/// NSUserActivity: an activity a scene continues (handoff, an app asking another to carry on).
public struct UserActivity: Sendable, Hashable, CustomStringConvertible {
    /// Reverse-DNS, one of the handling app's `[App] ActivityTypes=`.
    public var activityType: String
    public var title: String?
    public var userInfo: JSONObject?
    /// Matched against the scenes' activation conditions (SceneActivationConditions).
    public var targetContentIdentifier: String?
    public var webpageURL: String?

    public init(activityType: String, title: String? = nil, userInfo: JSONObject? = nil,
                targetContentIdentifier: String? = nil, webpageURL: String? = nil) {
        self.activityType = activityType
        self.title = title
        self.userInfo = userInfo
        self.targetContentIdentifier = targetContentIdentifier
        self.webpageURL = webpageURL
    }

    public var description: String { activityType + (targetContentIdentifier.map { " (\($0))" } ?? "") }

    // JSONObject is not Hashable: equal activities agree on these, which is all a hash needs.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(activityType)
        hasher.combine(targetContentIdentifier)
        hasher.combine(title)
        hasher.combine(webpageURL)
    }

    init?(wire: JSONValue) {
        guard let type = wire["activityType"]?.stringValue else { return nil }
        self.init(activityType: type, title: wire["title"]?.stringValue, userInfo: wire["userInfo"]?.objectValue,
                  targetContentIdentifier: wire["targetContentIdentifier"]?.stringValue,
                  webpageURL: wire["webpageURL"]?.stringValue)
    }

    /// io.scened.App's UserActivity.
    var wire: JSONValue {
        var o: JSONObject = ["activityType": .string(activityType)]
        if let title { o["title"] = .string(title) }
        if let userInfo { o["userInfo"] = .object(userInfo) }
        if let targetContentIdentifier { o["targetContentIdentifier"] = .string(targetContentIdentifier) }
        if let webpageURL { o["webpageURL"] = .string(webpageURL) }
        return .object(o)
    }
}

/// UISceneActivationConditions: which Opens a connected scene takes. scened matches the
/// patterns against an Open's target content identifier (a URL's whole text, or an activity's
/// targetContentIdentifier): "*" stands for any run of characters, "?" for one, anything else
/// for itself. A scene that prefers it is chosen first, then one that can take it; none: a new
/// scene. An identifier-less activity matches only scenes that take anything.
public struct SceneActivationConditions: Sendable, Hashable {
    /// canActivateForTargetContentIdentifierPredicate; nil (UIKit's default): anything.
    public var canActivateFor: [String]?
    /// prefersToActivateForTargetContentIdentifierPredicate; empty (the default): nothing.
    public var prefersToActivateFor: [String]

    public init(canActivateFor: [String]? = nil, prefersToActivateFor: [String] = []) {
        self.canActivateFor = canActivateFor
        self.prefersToActivateFor = prefersToActivateFor
    }

    public static let `default` = SceneActivationConditions()
}

/// Where an Open went (io.scened.App Open's reply).
public struct OpenResult: Sendable, Hashable {
    /// The app that handles the URL's scheme or the activity's type.
    public var app: String
    /// The session whose scene got it now, or (as a new scene's) gets it in willConnectTo.
    public var session: String?
    /// The app is not running: the Open is stored ("o12") and delivered when it launches.
    public var pendingOpen: String?

    public init(app: String, session: String? = nil, pendingOpen: String? = nil) {
        self.app = app
        self.session = session
        self.pendingOpen = pendingOpen
    }
}

extension AppEvent {
    /// willConnectTo's urlContexts, openURLContexts' URLs.
    var urlContexts: [OpenURLContext] { (fields["urlContexts"]?.arrayValue ?? []).compactMap(OpenURLContext.init(wire:)) }
    /// willConnectTo's userActivities, continueUserActivity's activities.
    var userActivities: [UserActivity] { (fields["userActivities"]?.arrayValue ?? []).compactMap(UserActivity.init(wire:)) }
}
