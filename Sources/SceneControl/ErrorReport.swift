import Glibc
import SceneInterface
import Varlink

/// Turns what a call can throw into an exit status and a one-line message.
enum ErrorReport {
    static let interface = ManagerInterface.name
    static let service = "org.varlink.service."

    /// The errors that mean "no such thing" (exit 4); everything else the daemon answers is 1.
    static let notFoundErrors: Set<String> = [
        "NoSuchSession", "SessionDiscarded", "NoSuchApp", "NoSuchTask", "NoSuchInterruption", "NoSuchBackgroundTask",
    ].reduce(into: []) { $0.insert("\(interface).\($1)") }

    static func control(for error: VarlinkError) -> ControlError {
        if error.name == service + "PermissionDenied" { return ControlError(.permissionDenied, message(for: error)) }
        return ControlError(notFoundErrors.contains(error.name) ? .notFound : .failure, message(for: error))
    }

    /// The daemon's own `message` when it sent one, else the error spelled out.
    static func message(for error: VarlinkError) -> String {
        if let text = error.parameters["message"]?.stringValue, !text.isEmpty { return text }
        let parameter = { (name: String) in error.parameters[name]?.stringValue ?? "?" }
        switch error.name {
        case service + "MethodNotFound": return "scened does not know the method \(parameter("method"))"
        case service + "MethodNotImplemented": return "scened does not implement \(parameter("method"))"
        case service + "InterfaceNotFound": return "scened does not provide the interface \(parameter("interface"))"
        case service + "InvalidParameter": return "scened rejected the parameter '\(parameter("parameter"))'"
        case service + "PermissionDenied": return "permission denied"
        case service + "ExpectedMore": return "scened expects this call to stream ('more')"
        default: break
        }
        var text = words(of: shortName(error.name))
        let details = error.parameters.map { key, value in "\(key): \(value.stringValue ?? value.description)" }
        if !details.isEmpty { text += " (" + details.joined(separator: ", ") + ")" }
        return text
    }

    /// Transport failures: the daemon is unreachable (3) unless it answered nonsense (1).
    static func control(for error: VarlinkClientError, socket: SocketLocation, noneExisted: Bool) -> ControlError {
        switch error {
        case .socket(let socketError):
            if noneExisted && socket.candidates.count > 1 {
                let list = socket.candidates.dropLast().joined(separator: ", ") + " or " + socket.candidates.last!
                return ControlError(.unreachable, "no scened socket at \(list); is scened running? (--socket or $SCENED_SOCKET name another)")
            }
            return ControlError(.unreachable, connectMessage(socketError, path: socket.path))
        case .connectionClosed:
            return ControlError(.unreachable, "scened closed the connection (\(socket.path))")
        case .timedOut:
            return ControlError(.unreachable, "timed out waiting for scened (\(socket.path))")
        case .io(let operation, let code):
            return ControlError(.unreachable, "\(socket.path): \(operation) failed: \(String(cString: strerror(code)))")
        case .messageTooLarge, .invalidReply:
            return ControlError(.failure, "bad reply from scened (\(socket.path)): \(error)")
        }
    }

    private static func connectMessage(_ error: SocketError, path: String) -> String {
        switch error {
        case .system(_, _, let code):
            let reason = String(cString: strerror(code))
            let hint = code == ENOENT || code == ECONNREFUSED ? "; is scened running?" : ""
            return "cannot connect to \(path): \(reason)\(hint)"
        default:
            return "cannot connect to scened: \(error.message)"
        }
    }

    static func shortName(_ name: String) -> Substring {
        guard let dot = name.lastIndex(of: ".") else { return name[...] }
        return name[name.index(after: dot)...]
    }

    /// "InvalidTransition" → "invalid transition".
    static func words(of name: Substring) -> String {
        var out = ""
        for character in name {
            if character.isUppercase, !out.isEmpty { out.append(" ") }
            out.append(contentsOf: character.lowercased())
        }
        return out
    }
}
