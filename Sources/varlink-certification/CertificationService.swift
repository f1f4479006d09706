import Varlink

/// The server's certification logic, without I/O: for each call, the replies to send (none
/// for a oneway call). Each client id walks the sequence once; a call out of order or with
/// other arguments than the sequence passes gets `CertificationError` and ends that client.
struct CertificationService {
    /// Next expected method per client id.
    private(set) var clients: [String: String] = [:]
    /// Client ids in the order they started, to forget the oldest when there are too many.
    private var started: [String] = []
    private let maxClients: Int
    private var makeID: () -> String

    let info = VarlinkServiceInfo(
        vendor: "scened", product: "varlink-certification", version: "1", url: "https://varlink.org",
        interfaces: [VarlinkInterfaceText(name: Certification.interfaceName, text: Certification.interfaceText)])

    init(maxClients: Int = 1024, makeID: @escaping () -> String) {
        self.maxClients = maxClients
        self.makeID = makeID
    }

    mutating func handle(_ call: VarlinkCall) -> [VarlinkReply] {
        let replies = answer(call)
        return call.oneway ? [] : replies
    }

    private mutating func answer(_ call: VarlinkCall) -> [VarlinkReply] {
        if let result = info.handleServiceCall(call) {
            switch result {
            case .success(let parameters): return [VarlinkReply(parameters: parameters)]
            case .failure(let error): return [VarlinkReply(error: error)]
            }
        }
        guard call.interfaceName == Certification.interfaceName else {
            return [VarlinkReply(error: .interfaceNotFound(String(call.interfaceName)))]
        }
        let method = String(call.methodName)
        guard Certification.sequence.contains(method) else {
            return [VarlinkReply(error: .methodNotFound(call.method))]
        }
        if method == "Start" { return start(call) }
        guard case .string(let id)? = call.parameters["client_id"], let expected = clients[id] else {
            return [VarlinkReply(error: VarlinkError(name: Certification.interfaceName + ".ClientIdError"))]
        }
        guard expected == method else {
            clients[id] = nil
            return [failure(wants: ["method": .string(Certification.interfaceName + "." + expected)], got: call)]
        }
        let wants = Self.expectedMessage(method, clientID: id)
        guard Self.matches(call, wants) else {
            clients[id] = nil
            return [failure(wants: wants, got: call)]
        }
        return advance(id, after: method)
    }

    private mutating func start(_ call: VarlinkCall) -> [VarlinkReply] {
        let wants: JSONObject = ["method": .string(call.method)]
        guard call.parameters.isEmpty, !call.more, !call.oneway else { return [failure(wants: wants, got: call)] }
        let id = makeID()
        if started.count >= maxClients {
            clients[started.removeFirst()] = nil
        }
        started.append(id)
        clients[id] = "Test01"
        return [VarlinkReply(parameters: ["client_id": .string(id)])]
    }

    private mutating func advance(_ id: String, after method: String) -> [VarlinkReply] {
        let index = Certification.sequence.firstIndex(of: method)!
        if method == "End" {
            clients[id] = nil
            started.removeAll { $0 == id }
        } else {
            clients[id] = Certification.sequence[index + 1]
        }
        if method == "Test10" {
            return Certification.moreReplies.enumerated().map { i, text in
                VarlinkReply(parameters: ["string": text], continues: i < Certification.moreReplies.count - 1)
            }
        }
        return [VarlinkReply(parameters: Certification.reply(to: method))]
    }

    /// The whole call message a certified client sends for `method`.
    static func expectedMessage(_ method: String, clientID: String) -> JSONObject {
        var parameters = Certification.arguments(of: method)
        parameters["client_id"] = .string(clientID)
        if method == "Test10" { parameters["mytype"] = .object(Certification.myType) }
        var message: JSONObject = ["method": .string(Certification.interfaceName + "." + method), "parameters": .object(parameters)]
        if method == "Test10" { message["more"] = true }
        if method == "Test11" { message["oneway"] = true }
        return message
    }

    static func matches(_ call: VarlinkCall, _ wants: JSONObject) -> Bool {
        guard call.more == (wants["more"] == .bool(true)), call.oneway == (wants["oneway"] == .bool(true)),
              !call.upgrade, case .object(var expected)? = wants["parameters"]
        else { return false }
        var got = call.parameters
        // MyType's nullable members may be null or left out.
        if case .object(let mine)? = got["mytype"], case .object(let theirs)? = expected["mytype"] {
            guard LooseEquality.equal(mine, theirs, nullable: ["nullable", "nullable_array_struct"]) else { return false }
            got["mytype"] = nil
            expected["mytype"] = nil
        }
        return LooseEquality.equal(got, expected)
    }

    /// The call as received, for the error's `got`.
    static func message(of call: VarlinkCall) -> JSONObject {
        var message: JSONObject = ["method": .string(call.method), "parameters": .object(call.parameters)]
        if call.more { message["more"] = true }
        if call.oneway { message["oneway"] = true }
        if call.upgrade { message["upgrade"] = true }
        return message
    }

    private func failure(wants: JSONObject, got call: VarlinkCall) -> VarlinkReply {
        VarlinkReply(parameters: ["wants": .object(wants), "got": .object(Self.message(of: call))],
                     error: Certification.interfaceName + ".CertificationError")
    }
}
