import Varlink

/// The client side: walks Start … End against a server, checking every reply against what
/// the certification defines, and prints each step. Throws at the first difference.
struct CertificationClient {
    struct Mismatch: Error, CustomStringConvertible {
        var description: String
    }

    let client: VarlinkClient

    private static func qualified(_ method: String) -> String { Certification.interfaceName + "." + method }

    func run() throws {
        try checkInterface()
        let start = try client.call(Self.qualified("Start"))
        guard case .string(let id)? = start["client_id"], !id.isEmpty else {
            throw Mismatch(description: "Start: no client_id in \(start)")
        }
        writeLine("Start: client_id \(id)")
        var last: JSONObject = [:]
        for method in Certification.sequence[1...9] {
            var parameters = method == "Test01" ? [:] : last
            parameters["client_id"] = .string(id)
            last = try client.call(Self.qualified(method), parameters)
            try expect(method, last, Certification.reply(to: method))
            writeLine("\(method): \(last)")
        }
        guard case .object(let myType)? = last["mytype"] else { throw Mismatch(description: "Test09: no mytype") }
        var strings: [JSONValue] = []
        try client.callMore(Self.qualified("Test10"), ["client_id": .string(id), "mytype": .object(myType)]) { reply in
            writeLine("Test10: \(reply)")
            strings.append(reply["string"] ?? .null)
            return true
        }
        guard strings == Certification.moreReplies else {
            throw Mismatch(description: "Test10: replies \(strings), wanted \(Certification.moreReplies)")
        }
        try client.send(oneway: Self.qualified("Test11"), ["client_id": .string(id), "last_more_replies": .array(strings)])
        writeLine("Test11: sent oneway")
        let end = try client.call(Self.qualified("End"), ["client_id": .string(id)])
        try expect("End", end, ["all_ok": true])
        writeLine("End: \(end)")
        writeLine("Certification passed")
    }

    /// The server's description of the interface must parse and name the methods.
    private func checkInterface() throws {
        let info = try client.call("org.varlink.service.GetInfo")
        guard info["interfaces"]?.arrayValue?.contains(.string(Certification.interfaceName)) == true else {
            throw Mismatch(description: "GetInfo does not list \(Certification.interfaceName): \(info)")
        }
        let reply = try client.call("org.varlink.service.GetInterfaceDescription", ["interface": .string(Certification.interfaceName)])
        guard case .string(let text)? = reply["description"] else { throw Mismatch(description: "no description in \(reply)") }
        let parsed = try VarlinkInterfaceDefinition.parse(text)
        let missing = Certification.sequence.filter { parsed.method(named: $0) == nil }
        guard parsed.name == Certification.interfaceName, missing.isEmpty else {
            throw Mismatch(description: "the interface description lacks \(missing)")
        }
        writeLine("GetInterfaceDescription: \(parsed.name) parsed")
    }

    /// Ignores members the sequence does not define (a server may add e.g. client_id).
    private func expect(_ method: String, _ got: JSONObject, _ wants: JSONObject) throws {
        var relevant = JSONObject()
        for key in wants.keys { relevant[key] = got[key] }
        guard LooseEquality.equal(relevant, wants) else {
            throw Mismatch(description: "\(method): got \(got), wanted \(wants)")
        }
    }
}
