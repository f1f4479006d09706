extension VarlinkInterfaceText {
    /// The `org.varlink.service` interface every Varlink service implements, including the
    /// `PermissionDenied` and `ExpectedMore` errors that systemd added and this library sends.
    /// Arrays use the current `[]string` syntax (the old `string[]` form is rejected by parsers).
    public static let varlinkService = VarlinkInterfaceText(
        name: "org.varlink.service",
        text: """
            # The Varlink service interface. Every Varlink service provides it so that clients can
            # find out which service they talk to and which interfaces it implements.
            interface org.varlink.service

            # Describes the service and lists the interfaces it implements.
            method GetInfo() -> (
              vendor: string,
              product: string,
              version: string,
              url: string,
              interfaces: []string
            )

            # Returns the interface definition text of one implemented interface.
            method GetInterfaceDescription(interface: string) -> (description: string)

            # The service does not implement the requested interface.
            error InterfaceNotFound (interface: string)

            # The requested method does not exist.
            error MethodNotFound (method: string)

            # The method is defined by the interface but this service does not implement it.
            error MethodNotImplemented (method: string)

            # A call parameter is missing, unknown or has the wrong value.
            error InvalidParameter (parameter: string)

            # The caller is not allowed to make this call.
            error PermissionDenied ()

            # The method must be called with 'more' set.
            error ExpectedMore ()

            """)
}
