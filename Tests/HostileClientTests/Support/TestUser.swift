import Glibc
import ScenedTestSupport

/// A system user that exists for one test, so that a client can connect with another uid:
/// created with useradd, removed with userdel -r by `remove()` or, at the latest, on release.
final class TestUser {
    let name: String
    let uid: uid_t
    let gid: gid_t
    private var removed = false

    /// The tests run as root (as CI does); only root may add users and switch to them.
    init() throws {
        guard geteuid() == 0 else { throw TestFailure("this test creates a user and must run as root") }
        let useradd = try SystemTools.require("useradd", for: "a client with another uid")
        _ = try SystemTools.require("userdel", for: "removing the test user")
        _ = try SystemTools.require("setpriv", for: "running a client as the test user")
        // Unique per run and short (user names are at most 32 bytes).
        let name = "schost\(getpid())x\(monotonicNanoseconds() % 100_000)"
        let made = try ScenedTestSupport.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                                             timeout: 20)
        guard made.status == 0 else { throw TestFailure("useradd failed: \(made.summary)") }
        guard let entry = getpwnam(name) else {
            _ = try? ScenedTestSupport.run([SystemTools.find("userdel") ?? "userdel", "-r", name], timeout: 20)
            throw TestFailure("useradd made \(name), but getpwnam does not find it")
        }
        self.name = name
        uid = entry.pointee.pw_uid
        gid = entry.pointee.pw_gid
    }

    deinit { removeNow() }

    /// userdel -r (the user, its group, its home and mail spool if any); again is harmless.
    func remove() throws {
        guard !removed else { return }
        removed = true
        guard let userdel = SystemTools.find("userdel") else { throw TestFailure("userdel is missing") }
        let result = try ScenedTestSupport.run([userdel, "-r", name], timeout: 20)
        guard result.status == 0 else { throw TestFailure("userdel -r \(name) failed: \(result.summary)") }
    }

    private func removeNow() { try? remove() }

    /// `arguments` run as this user (setpriv: its uid and gid, no supplementary groups).
    func run(_ arguments: [String], timeout: Double) throws -> Completed {
        let setpriv = try SystemTools.require("setpriv", for: "running a client as the test user")
        return try ScenedTestSupport.run([setpriv, "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"] + arguments,
                                         timeout: timeout)
    }
}

/// Lets other users reach `daemon` as an operator would (the daemon binds its socket 0660):
/// its directory 0755, its socket 0666. Returns a copy of scenectl that any user may run, in
/// that directory: the build directory may sit below one that other users cannot enter.
func shareWithOtherUsers(_ daemon: DaemonProcess) throws -> String {
    try Binaries.require(Binaries.scenectl)
    let directory = daemon.workspace.path
    for (path, mode) in [(directory, mode_t(0o755)), (daemon.socketPath, mode_t(0o666))] {
        guard chmod(path, mode) == 0 else { throw TestFailure("chmod \(path): \(errnoText())") }
    }
    let copy = directory + "/scenectl"
    guard try copyFile(Binaries.scenectl, to: copy) else { throw TestFailure("cannot copy \(Binaries.scenectl)") }
    guard chmod(copy, 0o755) == 0 else { throw TestFailure("chmod \(copy): \(errnoText())") }
    return copy
}
