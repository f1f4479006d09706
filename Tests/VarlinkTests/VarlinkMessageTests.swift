import Testing
@testable import Varlink

@Suite struct VarlinkCallTests {
    private func decode(_ text: String) throws -> VarlinkCall {
        try VarlinkCall(from: JSONParser.parse(text))
    }

    @Test func decodesAllFields() throws {
        let call = try decode(#"{"method":"io.example.scened.Ping","parameters":{"text":"hi"},"more":true,"oneway":false,"upgrade":true,"x-ignored":1}"#)
        #expect(call.method == "io.example.scened.Ping")
        #expect(call.parameters == ["text": "hi"])
        #expect(call.more && call.upgrade && !call.oneway)
        #expect(call.interfaceName == "io.example.scened")
        #expect(call.methodName == "Ping")
    }

    @Test func acceptsMissingNullOrEmptyParameters() throws {
        #expect(try decode(#"{"method":"org.varlink.service.GetInfo"}"#).parameters.isEmpty)
        #expect(try decode(#"{"method":"org.varlink.service.GetInfo","parameters":null}"#).parameters.isEmpty)
        #expect(try decode(#"{"parameters":{},"method":"org.varlink.service.GetInfo","oneway":null}"#).parameters.isEmpty)
    }

    @Test(arguments: [
        (#"[1]"#, ProtocolViolation.Reason.notAnObject, ""),
        (#""io.example.Ping""#, .notAnObject, ""),
        (#"{"parameters":{}}"#, .missingMethod, "method"),
        (#"{"method":5}"#, .invalidMethod, "method"),
        (#"{"method":"Ping"}"#, .invalidMethod, "method"),
        (#"{"method":"io.example."}"#, .invalidMethod, "method"),
        (#"{"method":"io.example.ping"}"#, .invalidMethod, "method"),
        (#"{"method":"example.Ping"}"#, .invalidMethod, "method"),
        (#"{"method":"1o.example.Ping"}"#, .invalidMethod, "method"),
        (#"{"method":"io.-example.Ping"}"#, .invalidMethod, "method"),
        (#"{"method":"io.ex_ample.Ping"}"#, .invalidMethod, "method"),
        (#"{"method":"io..example.Ping"}"#, .invalidMethod, "method"),
        (#"{"method":"io.example-.Ping"}"#, .invalidMethod, "method"),
        (#"{"method":"io.example.Pi_ng"}"#, .invalidMethod, "method"),
        (#"{"method":"io.example.Ping","parameters":[]}"#, .invalidParameters, "parameters"),
        (#"{"method":"io.example.Ping","parameters":"x"}"#, .invalidParameters, "parameters"),
        (#"{"method":"io.example.Ping","more":1}"#, .invalidFlag, "more"),
        (#"{"method":"io.example.Ping","oneway":"yes"}"#, .invalidFlag, "oneway"),
        (#"{"method":"io.example.Ping","upgrade":{}}"#, .invalidFlag, "upgrade"),
    ])
    func rejectsMalformedCalls(_ text: String, _ reason: ProtocolViolation.Reason, _ field: String) throws {
        let message = try JSONParser.parse(text)
        guard case .failure(let violation) = VarlinkCall.decode(message) else {
            Issue.record("accepted \(text)")
            return
        }
        #expect(violation.reason == reason)
        #expect(throws: VarlinkError.invalidParameter(field)) { try VarlinkCall(from: message) }
    }

    @Test func acceptsInterfaceNamesFromTheGrammar() throws {
        for method in ["a.b.C", "io.systemd.Journal.Synchronize", "com.example-dash.x1.Get2", "org.a--b.0x.M", "x.1.Y"] {
            #expect(throws: Never.self) { try decode(#"{"method":"\#(method)"}"#) }
        }
    }

    @Test func encodesWithNulAndOmitsFalseFlags() throws {
        let plain = VarlinkCall(method: "io.example.Ping", parameters: ["a": 1]).encoded()
        #expect(plain.last == 0)
        #expect(String(decoding: plain.dropLast(), as: UTF8.self) == #"{"method":"io.example.Ping","parameters":{"a":1}}"#)
        let flagged = VarlinkCall(method: "io.example.Ping", oneway: true, more: true, upgrade: true)
        let text = String(decoding: flagged.encoded().dropLast(), as: UTF8.self)
        #expect(text == #"{"method":"io.example.Ping","parameters":{},"oneway":true,"more":true,"upgrade":true}"#)
        #expect(try VarlinkCall(from: JSONParser.parse(Array(flagged.encoded().dropLast()))) == flagged)
    }
}

@Suite struct VarlinkReplyTests {
    @Test func encodesAndDecodes() throws {
        let reply = VarlinkReply(parameters: ["n": 1], continues: true)
        let bytes = reply.encoded()
        #expect(bytes.last == 0)
        #expect(String(decoding: bytes.dropLast(), as: UTF8.self) == #"{"parameters":{"n":1},"continues":true}"#)
        #expect(try VarlinkReply(from: JSONParser.parse(Array(bytes.dropLast()))) == reply)

        let failed = VarlinkReply(error: .methodNotFound("a.b.C"))
        #expect(String(decoding: failed.encoded().dropLast(), as: UTF8.self)
            == #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"a.b.C"}}"#)
        #expect(failed.varlinkError == .methodNotFound("a.b.C"))
        #expect(VarlinkReply().varlinkError == nil)
    }

    @Test func decodingIsLenientAboutMissingParametersOnly() throws {
        #expect(try VarlinkReply(from: ["error": "a.b.E"]) == VarlinkReply(error: "a.b.E"))
        #expect(try VarlinkReply(from: ["parameters": .null]) == VarlinkReply())
        #expect(throws: VarlinkError.invalidParameter("")) { try VarlinkReply(from: [1]) }
        #expect(throws: VarlinkError.invalidParameter("parameters")) { try VarlinkReply(from: ["parameters": 1]) }
        #expect(throws: VarlinkError.invalidParameter("continues")) { try VarlinkReply(from: ["continues": "yes"]) }
        #expect(throws: VarlinkError.invalidParameter("error")) { try VarlinkReply(from: ["error": 3]) }
    }
}

@Suite struct VarlinkErrorTests {
    @Test func serviceErrorsHaveStandardNamesAndParameters() {
        #expect(VarlinkError.interfaceNotFound("x.y") == VarlinkError(name: "org.varlink.service.InterfaceNotFound", parameters: ["interface": "x.y"]))
        #expect(VarlinkError.methodNotFound("x.y.Z") == VarlinkError(name: "org.varlink.service.MethodNotFound", parameters: ["method": "x.y.Z"]))
        #expect(VarlinkError.methodNotImplemented("x.y.Z") == VarlinkError(name: "org.varlink.service.MethodNotImplemented", parameters: ["method": "x.y.Z"]))
        #expect(VarlinkError.invalidParameter("id") == VarlinkError(name: "org.varlink.service.InvalidParameter", parameters: ["parameter": "id"]))
        #expect(VarlinkError.permissionDenied() == VarlinkError(name: "org.varlink.service.PermissionDenied"))
        #expect(VarlinkError.expectedMore() == VarlinkError(name: "org.varlink.service.ExpectedMore"))
    }

    @Test func encodesAsErrorReply() throws {
        let bytes = VarlinkError(name: "io.example.NoSuchSession", parameters: ["id": "zz"]).encoded()
        #expect(bytes.last == 0)
        let reply = try VarlinkReply(from: JSONParser.parse(Array(bytes.dropLast())))
        #expect(reply.error == "io.example.NoSuchSession")
        #expect(reply.parameters == ["id": "zz"])
        #expect(VarlinkError.permissionDenied().description == "org.varlink.service.PermissionDenied")
        #expect(VarlinkError.invalidParameter("x").description == #"org.varlink.service.InvalidParameter {"parameter":"x"}"#)
    }
}
