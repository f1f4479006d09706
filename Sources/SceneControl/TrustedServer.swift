import Glibc
import SystemdKit
import Varlink

/// Before anything is sent: the socket must be served by root, by scened's service user or by
/// the caller itself. Anyone else serving there is an impostor (another user who got to the
/// path first, or moved the real socket aside) and would be handed the caller's data.
enum TrustedServer {
    static let serviceUser = "scened"

    static func check(_ client: VarlinkClient, path: String) throws {
        guard let server = client.serverCredentials else {
            throw ControlError(.permissionDenied, "cannot tell who serves \(path) (SO_PEERCRED failed); not talking to it")
        }
        guard !trusted(uid: server.uid) else { return }
        client.close()
        throw ControlError(.permissionDenied,
                           "\(path) is served by \(name(server.uid)) (uid \(server.uid), pid \(server.pid)), not by root, \(serviceUser) or you: not talking to it")
    }

    static func trusted(uid: UInt32) -> Bool {
        uid == 0 || uid == getuid() || uid == serviceUID()
    }

    private static func serviceUID() -> UInt32? { UserDatabase.uid(serviceUser) }

    private static func name(_ uid: UInt32) -> String { UserDatabase.userName(uid) }
}
