import Glibc
import ScenedTestSupport

/// Real users and a group, made for one test run and removed after it (even when it fails):
/// authorization is about uids and gids the kernel vouches for, so it is tested with real ones.
final class TestUsers {
    let suffix: String
    let adminGroup: String
    /// A member of `adminGroup`.
    let admin: String
    /// The owner of `AccessControlTests.ownedApp`.
    let owner: String
    /// The owner of `AccessControlTests.otherApp`.
    let otherOwner: String
    /// Nobody in particular.
    let stranger: String
    private var created: [String] = []
    private var createdGroups: [String] = []

    init() throws {
        // Short (user names have at most 32 characters) and unlikely to collide.
        suffix = String(UInt32(truncatingIfNeeded: monotonicNanoseconds() ^ UInt64(getpid()) << 20) % 0xFFFFFF, radix: 16)
        adminGroup = "sctadm\(suffix)"
        admin = "sctadmin\(suffix)"
        owner = "sctowner\(suffix)"
        otherOwner = "sctother\(suffix)"
        stranger = "sctstrgr\(suffix)"
        do {
            try command([tool("groupadd"), adminGroup])
            createdGroups.append(adminGroup)
            for (name, groups) in [(admin, [adminGroup]), (owner, []), (otherOwner, []), (stranger, [])] {
                var args = [tool("useradd"), "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group"]
                if !groups.isEmpty { args += ["--groups", groups.joined(separator: ",")] }
                try command(args + [name])
                created.append(name)
            }
        } catch {
            remove()
            throw error
        }
    }

    func uid(_ name: String) -> UInt32 {
        guard let entry = getpwnam(name) else { return UInt32.max }
        return entry.pointee.pw_uid
    }

    func remove() {
        for name in created.reversed() { _ = try? ScenedTestSupport.run([tool("userdel"), name]) }
        for name in createdGroups.reversed() { _ = try? ScenedTestSupport.run([tool("groupdel"), name]) }
        created.removeAll()
        createdGroups.removeAll()
    }

    /// `arguments` as `user`, with a bare environment plus `environment`. `hidingSystemSocket`
    /// runs it in a mount namespace of its own where /run/scened is empty: a test of how a user's
    /// scenectl finds the user's own daemon must not find a system daemon that happens to run on
    /// this machine (the README's walkthrough daemon, run as root, serves /run/scened), which
    /// scenectl rightly prefers to the per-user fallback under /tmp.
    func run(as user: String, _ arguments: [String], environment: [String] = [], hidingSystemSocket: Bool = false,
             timeout: Double = 20) throws -> Completed {
        var command = [tool("env"), "-i", "PATH=/usr/bin:/bin"] + environment + arguments
        if user != "root" { command = [tool("setpriv"), "--reuid", user, "--regid", user, "--init-groups", "--"] + command }
        if hidingSystemSocket {
            // Exit 97 if the masking fails, so the test cannot pass by finding the host's socket.
            let mask = "if [ -e /run/scened ]; then mount -t tmpfs -o mode=0755 scened-test /run/scened || exit 97; fi; exec \"$@\""
            command = [tool("unshare"), "--mount", "--propagation", "private", "--", tool("sh"), "-c", mask, "sh"] + command
        }
        return try ScenedTestSupport.run(command, timeout: timeout)
    }

    private func command(_ arguments: [String]) throws {
        let r = try ScenedTestSupport.run(arguments)
        guard r.status == 0 else { throw TestFailure("\(r.summary)") }
    }
}

/// A system program by name (the test processes do not search PATH).
func tool(_ name: String) -> String {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] where access(dir + "/" + name, X_OK) == 0 { return dir + "/" + name }
    return name
}
