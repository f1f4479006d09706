/// An interface's name and its IDL text, as served by `GetInterfaceDescription`.
public struct VarlinkInterfaceText: Sendable, Equatable {
    public var name: String
    public var text: String

    public init(name: String, text: String) {
        self.name = name
        self.text = text
    }

    /// Takes the name from the text itself, which must be a valid interface definition.
    public init(text: String) throws(IDLError) {
        self.init(name: try VarlinkInterfaceDefinition.parse(text).name, text: text)
    }
}

/// What a service says about itself through `org.varlink.service`.
public struct VarlinkServiceInfo: Sendable {
    public var vendor: String
    public var product: String
    public var version: String
    public var url: String
    /// The service's own interfaces; `org.varlink.service` is added automatically.
    public var interfaces: [VarlinkInterfaceText]

    public init(vendor: String, product: String, version: String, url: String, interfaces: [VarlinkInterfaceText]) {
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
        self.interfaces = interfaces
    }

    private static let servicePrefix = "org.varlink.service."

    /// `org.varlink.service` first, then the service's interfaces without duplicates.
    public var allInterfaces: [VarlinkInterfaceText] {
        var all = [VarlinkInterfaceText.varlinkService]
        for interface in interfaces where !all.contains(where: { $0.name == interface.name }) {
            all.append(interface)
        }
        return all
    }

    /// Answers `org.varlink.service` calls; nil for any other interface.
    public func handleServiceCall(_ call: VarlinkCall) -> Result<JSONObject, VarlinkError>? {
        // Runs for every call the daemon receives, so the common "not ours" answer is a cheap
        // prefix test; the exact check then rules out e.g. `org.varlink.service.x.GetInfo`.
        guard call.method.hasPrefix(Self.servicePrefix), call.interfaceName == "org.varlink.service" else { return nil }
        switch call.methodName {
        case "GetInfo":
            let names = allInterfaces.map { JSONValue.string($0.name) }
            return .success([
                "vendor": .string(vendor),
                "product": .string(product),
                "version": .string(version),
                "url": .string(url),
                "interfaces": .array(names),
            ])
        case "GetInterfaceDescription":
            guard case .string(let name)? = call.parameters["interface"] else {
                return .failure(.invalidParameter("interface"))
            }
            guard let interface = allInterfaces.first(where: { $0.name == name }) else {
                return .failure(.interfaceNotFound(name))
            }
            return .success(["description": .string(interface.text)])
        default:
            return .failure(.methodNotFound(call.method))
        }
    }
}
