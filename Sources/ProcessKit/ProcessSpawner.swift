import CProcessShim
import Glibc

/// Starts processes (the clone and the child side in CProcessShim) and reaps them through their
/// pidfd, never blocking.
public enum ProcessSpawner {
    /// Starts `spec`. Failures before exec, in the child too, are thrown with the step and
    /// errno; the failed child has been reaped.
    public static func spawn(_ spec: LaunchSpec) throws(SpawnError) -> SpawnedProcess {
        guard spec.executable.hasPrefix("/") else { throw SpawnError(stage: .arguments, code: 0, pid: nil, subject: spec.executable) }
        guard !spec.arguments.isEmpty else { throw SpawnError(stage: .arguments, code: 0, pid: nil, subject: "(empty argv)") }
        if let cgroup = spec.cgroup, !cgroup.hasPrefix("/") {
            throw SpawnError(stage: .arguments, code: 0, pid: nil, subject: "cgroup " + cgroup)
        }
        let argv = CStringArray(spec.arguments)
        let envp = CStringArray(spec.environment)
        defer { argv.free(); envp.free() }
        let procs = spec.cgroup.map { Cgroup(path: $0).file("cgroup.procs") }

        var result = ps_spawn_result()
        let rc = spec.executable.withCString { path in
            withOptionalCString(spec.workingDirectory) { directory in
                withOptionalCString(procs) { procs in
                    var request = ps_spawn_request()
                    request.path = path
                    request.argv = UnsafePointer(argv.pointer)
                    request.envp = UnsafePointer(envp.pointer)
                    request.directory = directory
                    request.cgroup_procs = procs
                    if let gid = spec.gid, gid != getgid() || gid != getegid() {
                        request.change_gid = 1
                        request.gid = gid
                    }
                    if let uid = spec.uid, uid != getuid() || uid != geteuid() {
                        request.change_uid = 1
                        request.uid = uid
                    }
                    request.stdout_fd = spec.stdoutFD ?? -1
                    request.stderr_fd = spec.stderrFD ?? -1
                    return ps_spawn(&request, &result)
                }
            }
        }
        guard rc == 0 else {
            let stage = Self.stage(result.stage)
            throw SpawnError(stage: stage, code: result.error, pid: result.pid > 0 ? result.pid : nil,
                             subject: subject(of: stage, spec))
        }
        return SpawnedProcess(pid: result.pid, pidfd: result.pidfd)
    }

    /// waitid(P_PIDFD, WEXITED | WNOHANG): the exit status once the process has ended (and is
    /// reaped by this call), nil while it runs — or if `pidfd` names no unreaped child of ours.
    public static func reap(pidfd: Int32) -> ExitStatus? {
        var code: Int32 = 0, status: Int32 = 0
        guard ps_reap(pidfd, &code, &status) == 1 else { return nil }
        if code == ps_cld_exited() { return .exited(status) }
        return .killed(signal: status, coreDumped: code == ps_cld_dumped())
    }

    /// pidfd_send_signal: no risk of signalling a recycled pid. False with errno set on failure.
    @discardableResult
    public static func signal(_ signal: Int32, pidfd: Int32) -> Bool {
        ps_pidfd_signal(pidfd, signal) == 0
    }

    private static func stage(_ raw: Int32) -> SpawnError.Stage {
        switch UInt32(raw) {
        case PS_STAGE_PIPE.rawValue: return .pipe
        case PS_STAGE_FORK.rawValue: return .fork
        case PS_STAGE_PIDFD.rawValue: return .pidfd
        case PS_STAGE_SIGNALS.rawValue: return .signals
        case PS_STAGE_SESSION.rawValue: return .session
        case PS_STAGE_CGROUP.rawValue: return .cgroup
        case PS_STAGE_GROUPS.rawValue: return .groups
        case PS_STAGE_GID.rawValue: return .gid
        case PS_STAGE_UID.rawValue: return .uid
        case PS_STAGE_CHDIR.rawValue: return .directory
        case PS_STAGE_STDIO.rawValue: return .stdio
        case PS_STAGE_DESCRIPTORS.rawValue: return .descriptors
        default: return .exec
        }
    }

    /// What the message names after the step: the path, id or descriptor it was about.
    private static func subject(of stage: SpawnError.Stage, _ spec: LaunchSpec) -> String? {
        switch stage {
        case .exec: return spec.executable
        case .directory: return spec.workingDirectory ?? "/"
        case .cgroup: return spec.cgroup
        case .uid: return spec.uid.map { String($0) }
        case .gid, .groups: return spec.gid.map { String($0) }
        case .stdio:
            return "(stdout \(spec.stdoutFD.map { String($0) } ?? "/dev/null"), stderr \(spec.stderrFD.map { String($0) } ?? "/dev/null"))"
        default: return nil
        }
    }
}

/// A NULL-terminated char*[] built before fork (the child must not allocate).
private struct CStringArray {
    let pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointer = .allocate(capacity: strings.count + 1)
        for (i, s) in strings.enumerated() { pointer[i] = strdup(s) }
        pointer[strings.count] = nil
    }

    func free() {
        for i in 0..<count { Glibc.free(pointer[i]) }
        pointer.deallocate()
    }
}

private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
