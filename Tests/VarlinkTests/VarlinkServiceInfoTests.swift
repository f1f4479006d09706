import Testing
@testable import Varlink

@Suite struct VarlinkServiceInfoTests {
    static let sampleIDL = """
        interface io.example.scened
        method Ping(text: ?string) -> (text: string)
        """

    private var info: VarlinkServiceInfo {
        VarlinkServiceInfo(
            vendor: "Example", product: "scened", version: "1.0", url: "https://example.com/scened",
            interfaces: [VarlinkInterfaceText(name: "io.example.scened", text: Self.sampleIDL)])
    }

    @Test func getInfoListsServiceInterfaceFirst() throws {
        let result = try #require(info.handleServiceCall(VarlinkCall(method: "org.varlink.service.GetInfo")))
        let parameters = try result.get()
        #expect(parameters == [
            "vendor": "Example", "product": "scened", "version": "1.0", "url": "https://example.com/scened",
            "interfaces": ["org.varlink.service", "io.example.scened"],
        ])
    }

    @Test func interfacesAreNotListedTwice() {
        var info = self.info
        info.interfaces.append(.varlinkService)
        #expect(info.allInterfaces.map(\.name) == ["org.varlink.service", "io.example.scened"])
    }

    @Test func servesInterfaceDescriptionsIncludingItsOwn() throws {
        let own = try #require(info.handleServiceCall(VarlinkCall(method: "org.varlink.service.GetInterfaceDescription", parameters: ["interface": "io.example.scened"])))
        #expect(try own.get() == ["description": .string(Self.sampleIDL)])
        let service = try #require(info.handleServiceCall(VarlinkCall(method: "org.varlink.service.GetInterfaceDescription", parameters: ["interface": "org.varlink.service"])))
        #expect(try service.get()["description"]?.stringValue == VarlinkInterfaceText.varlinkService.text)
    }

    @Test func unknownInterfaceIsInterfaceNotFound() {
        let result = info.handleServiceCall(VarlinkCall(method: "org.varlink.service.GetInterfaceDescription", parameters: ["interface": "io.example.nope"]))
        #expect(result == .failure(.interfaceNotFound("io.example.nope")))
    }

    @Test func badRequestsGetServiceErrors() {
        let missing = info.handleServiceCall(VarlinkCall(method: "org.varlink.service.GetInterfaceDescription"))
        #expect(missing == .failure(.invalidParameter("interface")))
        let wrongType = info.handleServiceCall(VarlinkCall(method: "org.varlink.service.GetInterfaceDescription", parameters: ["interface": 1]))
        #expect(wrongType == .failure(.invalidParameter("interface")))
        let unknown = info.handleServiceCall(VarlinkCall(method: "org.varlink.service.Frobnicate"))
        #expect(unknown == .failure(.methodNotFound("org.varlink.service.Frobnicate")))
    }

    @Test func otherInterfacesAreLeftToTheCaller() {
        #expect(info.handleServiceCall(VarlinkCall(method: "io.example.scened.Ping")) == nil)
        #expect(info.handleServiceCall(VarlinkCall(method: "org.varlink.serviceX.GetInfo")) == nil)
    }

    @Test func serviceIDLParsesAndDeclaresTheStandardMembers() throws {
        let definition = try VarlinkInterfaceDefinition.parse(VarlinkInterfaceText.varlinkService.text)
        #expect(definition.name == "org.varlink.service")
        #expect(definition.methods.map(\.name) == ["GetInfo", "GetInterfaceDescription"])
        #expect(definition.errors.map(\.name) == [
            "InterfaceNotFound", "MethodNotFound", "MethodNotImplemented", "InvalidParameter", "PermissionDenied", "ExpectedMore",
        ])
        #expect(definition.method(named: "GetInfo")?.output.last == VarlinkField(name: "interfaces", type: .array(.string)))
        // The service's replies conform to its own IDL.
        let reply = try info.handleServiceCall(VarlinkCall(method: "org.varlink.service.GetInfo"))!.get()
        let output = definition.method(named: "GetInfo")!.output
        #expect(definition.conforms(.object(reply), to: .structure(output)))
        for error in [VarlinkError.interfaceNotFound("a.b"), .methodNotFound("a.b.C"), .methodNotImplemented("a.b.C"), .invalidParameter("x"), .permissionDenied(), .expectedMore()] {
            let name = String(error.name.split(separator: ".").last!)
            let declared = try #require(definition.error(named: error.name), "\(name)")
            #expect(definition.conforms(.object(error.parameters), to: .structure(declared.parameters)))
        }
    }

    @Test func interfaceTextCanTakeItsNameFromTheIDL() throws {
        #expect(try VarlinkInterfaceText(text: Self.sampleIDL).name == "io.example.scened")
        #expect(throws: IDLError.self) { try VarlinkInterfaceText(text: "interface nope") }
    }
}
