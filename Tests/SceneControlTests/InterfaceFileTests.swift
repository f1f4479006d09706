import ScenedTestSupport
import SceneInterface
import Testing
import Varlink
@testable import SceneControl

/// The interface as shipped (interfaces/io.scened.Manager.varlink, installed by
/// packaging/install) is the text the daemon serves, and scenectl's names are in it.
@Suite struct InterfaceFileTests {
    @Test func shippedFileIsTheEmbeddedText() {
        let shipped = readTextFile(packageRoot() + "/interfaces/" + ManagerInterface.name + ".varlink")
        // The file ends its last line; the Swift literal does not.
        #expect(shipped == ManagerInterface.text + "\n",
                "interfaces/\(ManagerInterface.name).varlink differs from ManagerInterface.text: copy the text into the file")
    }

    @Test func shippedAppFileIsTheEmbeddedText() throws {
        let shipped = readTextFile(packageRoot() + "/interfaces/" + AppInterface.name + ".varlink")
        #expect(shipped == AppInterface.text + "\n",
                "interfaces/\(AppInterface.name).varlink differs from AppInterface.text: copy the text into the file")
        let interface = try VarlinkInterfaceDefinition.parse(AppInterface.text)
        #expect(interface.name == AppInterface.name)
        let methods = Set(interface.methods.map(\.name))
        for name in ["Attach", "Acknowledge", "Detach", "RequestSceneSessionActivation"] { #expect(methods.contains(name), "\(name)") }
    }

    @Test func scenectlNamesAreDeclared() throws {
        let interface = try VarlinkInterfaceDefinition.parse(ManagerInterface.text)
        #expect(interface.name == ErrorReport.interface)
        let errors = Set(interface.errors.map { ManagerInterface.name + "." + $0.name })
        for name in ErrorReport.notFoundErrors { #expect(errors.contains(name), "\(name) is not an error of the interface") }
        #expect(errors.contains(ManagerInterface.name + ".EventsUnavailable"))
        let methods = Set(interface.methods.map(\.name))
        for name in ["Monitor", "ListSessions", "GetStatus", "Reload"] { #expect(methods.contains(name), "\(name)") }
    }
}
