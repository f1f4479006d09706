import Varlink

/// A Varlink connection as scenectl uses it. `VarlinkClient` is the real one; tests inject
/// recorders with canned replies. Error replies are thrown as `VarlinkError`, transport
/// failures as `VarlinkClientError`.
public protocol ManagerTransport: AnyObject {
    func call(_ method: String, _ parameters: JSONObject) throws -> JSONObject
    /// Calls with `more`; `each` gets every reply and returns false to stop listening.
    func callMore(_ method: String, _ parameters: JSONObject, each: (JSONObject) throws -> Bool) throws
    /// A descriptor that becomes readable when the daemon closes the connection, for waiting
    /// on it between calls (`interrupt`); nil when there is none to poll.
    var hangUpDescriptor: Int32? { get }
}

extension ManagerTransport {
    public var hangUpDescriptor: Int32? { nil }
}

extension VarlinkClient: ManagerTransport {
    public var hangUpDescriptor: Int32? { isClosed ? nil : descriptor }
}
