import Foundation
import Varlink

/// UIBackgroundModes as scened has them (io.scened.App's BackgroundMode): an activity that keeps
/// the app from being suspended while it runs, if the app's `[App] BackgroundModes=` declares it.
public enum BackgroundMode: String, Sendable, Hashable, CaseIterable {
    case audio, location, voip, processing
}

/// A notification scened hands the app (io.scened.Manager.Notify, then didReceiveNotification):
/// UIKit's remote notification, its payload a JSON object as a session's userInfo is.
public struct RemoteNotification: Sendable, Equatable {
    /// scened's id for it ("n12").
    public var identifier: String
    public var payload: JSONObject
    /// The sequence number of the didReceiveNotification event (what the answer acknowledges).
    public var seq: UInt64
    /// When scened suspends the app again whether or not the handler returned.
    public var deadline: Date?

    public init(identifier: String, payload: JSONObject, seq: UInt64, deadline: Date? = nil) {
        self.identifier = identifier
        self.payload = payload
        self.seq = seq
        self.deadline = deadline
    }

    init(_ e: AppEvent) {
        self.init(identifier: e.fields["notification"]?.stringValue ?? e.fields["identifier"]?.stringValue ?? "",
                  payload: e.fields["payload"]?.objectValue ?? [:], seq: e.seq, deadline: e.deadline.map(wallDate))
    }

    /// The payload decoded with JSONDecoder.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: Data(JSONValue.object(payload).serialized()))
    }
}

/// Microseconds since the Unix epoch (the wire's times) as a Date.
func wallDate(_ microseconds: Int64) -> Date {
    Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
}
