import Glibc

/// What to start and in which conditions. Nothing is inherited from the daemon but the
/// descriptors named here: the environment is exactly `environment`, every other descriptor is
/// closed, signals start unblocked with default dispositions.
public struct LaunchSpec: Sendable, Equatable {
    /// Absolute path of the program (no PATH search).
    public var executable: String
    /// argv, including argv[0].
    public var arguments: [String]
    /// "NAME=value" entries, exactly the child's environment.
    public var environment: [String]
    /// nil: "/".
    public var workingDirectory: String?
    /// Set (and different from ours): the child switches to it, after the cgroup and groups.
    /// Give `gid` too: without it the child keeps our gid (as its only group).
    public var uid: uid_t?
    /// Set (and different from ours): the child's only group, supplementary ones dropped.
    public var gid: gid_t?
    /// An absolute cgroup v2 directory the child joins before exec.
    public var cgroup: String?
    /// Descriptors of ours that become the child's 1 and 2; nil: /dev/null.
    public var stdoutFD: Int32?
    public var stderrFD: Int32?

    public init(executable: String, arguments: [String], environment: [String] = [],
                workingDirectory: String? = nil, uid: uid_t? = nil, gid: gid_t? = nil,
                cgroup: String? = nil, stdoutFD: Int32? = nil, stderrFD: Int32? = nil) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.uid = uid
        self.gid = gid
        self.cgroup = cgroup
        self.stdoutFD = stdoutFD
        self.stderrFD = stderrFD
    }
}
