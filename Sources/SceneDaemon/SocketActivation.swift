import Glibc
import SystemdKit

/// Which of the sockets systemd passed is the Varlink one: the one named `varlink`
/// (FileDescriptorName= in scened.socket), or a lone unnamed one (a unit or a tool such as
/// systemd-socket-activate that names none). Whatever else was passed is not ours to use.
enum SocketActivation {
    static let name = "varlink"

    struct Choice: Equatable {
        var listener: ListenFD
        /// Passed too but not used: closed, and named in a warning.
        var others: [ListenFD]
    }

    /// nil when nothing was passed; throws when what was passed has no Varlink socket.
    static func choose(_ passed: [ListenFD]) throws(ActivationError) -> Choice? {
        guard !passed.isEmpty else { return nil }
        let named = passed.filter { $0.name == name }
        if named.count > 1 { throw ActivationError("\(named.count) sockets are named '\(name)'; expected one") }
        if let listener = named.first {
            return Choice(listener: listener, others: passed.filter { $0 != listener })
        }
        if passed.count == 1, passed[0].name == nil { return Choice(listener: passed[0], others: []) }
        let names = passed.map { $0.name.map { "'\($0)'" } ?? "unnamed" }.joined(separator: ", ")
        throw ActivationError("no socket named '\(name)' among the \(passed.count) passed (\(names)); "
                              + "name it with FileDescriptorName=\(name) in the socket unit")
    }

    struct ActivationError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
