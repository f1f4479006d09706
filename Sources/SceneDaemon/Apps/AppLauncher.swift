import Glibc
import ProcessKit
import SceneCore
import SystemdKit

/// The processes of the apps scened starts, as the kernel sees them: spawns them into a cgroup
/// of their own (or a process group of their own where no cgroup can be had), freezes, thaws,
/// signals and kills them, reads their memory, and reports each exit. It decides nothing:
/// `LaunchTable` does.
///
/// Cgroups: a subtree of scened's own cgroup v2 — delegated to it by the service manager
/// (`Delegate=yes`) — with one child per app, `app-APP`. The core freezer (`cgroup.freeze`)
/// and `cgroup.kill` need no controller, so this works in hybrid mode too, where systemd 252
/// itself cannot freeze units.
final class AppLauncher {
    /// How one app's processes are held.
    enum Container {
        case cgroup(Cgroup)
        case processGroup(ProcessGroup)
    }

    struct Running {
        let pid: Int32
        let pidfd: Int32
        let container: Container
        var source: IOSource?
        let startedAt: UInt64
    }

    let loop: EventLoop
    /// The cgroup under which apps get theirs; nil: process groups only.
    let cgroupBase: String?
    /// Why there is no cgroup base, for the status and the journal.
    let cgroupProblem: String?
    /// Cgroups of a previous scened found at start, their processes killed, for the journal.
    private(set) var stale: [String] = []
    private(set) var running: [AppID: Running] = [:]
    /// Where a pidfd's readiness is reported (`DaemonInput.appExited`).
    let inbox: LoopInbox<DaemonInput>

    init(loop: EventLoop, inbox: LoopInbox<DaemonInput>, base: String? = AppLauncher.defaultBase(), cgroups: Bool = true) {
        self.loop = loop
        self.inbox = inbox
        var problem: String?
        var usable: String?
        if let base { stale = Self.removeStale(base: base) }
        if !cgroups {
            problem = "AppCgroups=no: apps are held in process groups, frozen with SIGSTOP"
        } else if let base {
            do {
                _ = try Cgroup.create(base)
                usable = base
            } catch {
                problem = "cannot create cgroup \(base) (\(error)): apps are held in process groups, frozen with SIGSTOP"
            }
        } else {
            problem = "no cgroup v2 hierarchy: apps are held in process groups, frozen with SIGSTOP"
        }
        cgroupBase = usable
        cgroupProblem = problem
    }

    /// scened's own cgroup when the service manager made it the unit's (`Delegate=yes`): its
    /// `apps` child; otherwise a child named after this process, so that daemons sharing a
    /// cgroup (tests, a shell) never share apps.
    static func defaultBase() -> String? {
        guard let own = Cgroup.own() else { return nil }
        let name = own.split(separator: "/").last.map(String.init) ?? ""
        if name.hasSuffix(".service") { return own + "/apps" }
        return (own.hasSuffix("/") ? own : own + "/") + "scened.\(getpid())"
    }

    /// What a scened that is gone left behind (it was killed, or crashed outside a service
    /// host, which would have stopped its cgroup): the apps' cgroups of this unit's
    /// previous run (`apps/app-*`), or the `scened.PID` directories beside ours whose daemon
    /// no longer runs. Their processes are nobody's now: killed, and the cgroups removed, so
    /// that no process of an app outlives the daemon that ran it.
    static func removeStale(base: String) -> [String] {
        guard let slash = base.lastIndex(of: "/") else { return [] }
        let parent = String(base[..<slash])
        var found: [String] = []
        if base.hasSuffix("/apps") {
            found = subdirectories(base).filter { $0.hasPrefix("app-") }.map { base + "/" + $0 }
        } else {
            for name in subdirectories(parent) where name.hasPrefix("scened.") {
                guard let pid = Int32(name.dropFirst(7)), pid != getpid() else { continue }
                let comm = (try? String(decoding: readAll("/proc/\(pid)/comm"), as: UTF8.self)) ?? ""
                if comm.hasPrefix("scened") { continue }
                found.append(parent + "/" + name)
            }
        }
        for dir in found { removeTree(dir) }
        return found
    }

    private static func removeTree(_ dir: String) {
        for name in subdirectories(dir) { removeTree(dir + "/" + name) }
        let cg = Cgroup(path: dir)
        try? cg.kill()
        // The kill is carried out asynchronously: a moment for the last process to go.
        for _ in 0..<100 where (try? cg.events())?.populated ?? false { usleep(10_000) }
        try? cg.remove()
    }

    private static func subdirectories(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".", name != "..", entry.pointee.d_type == UInt8(DT_DIR) { names.append(name) }
        }
        return names
    }

    private static func readAll(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LaunchFailure(message: "open \(path)") }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return out }
            out += buffer[..<n]
        }
    }

    func isRunning(_ app: AppID) -> Bool { running[app] != nil }
    func pid(of app: AppID) -> Int32? { running[app]?.pid }
    var usesCgroups: Bool { cgroupBase != nil }

    /// Starts the app's process; it is watched until it exits.
    func spawn(_ app: AppID, _ spec: LaunchSpec) throws(LaunchFailure) -> Int32 {
        var spec = spec
        var container: Container?
        if let base = cgroupBase {
            let path = base + "/app-" + app.rawValue
            do {
                _ = try Cgroup.create(path)
                spec.cgroup = path
                container = .cgroup(Cgroup(path: path))
            } catch {
                throw LaunchFailure(message: "cannot create cgroup \(path): \(error)")
            }
        }
        let process: SpawnedProcess
        do {
            process = try ProcessSpawner.spawn(spec)
        } catch {
            if case .cgroup(let cg)? = container { try? cg.remove() }
            throw LaunchFailure(message: "\(error)")
        }
        let held = container ?? .processGroup(ProcessGroup(pgid: process.pid))
        var r = Running(pid: process.pid, pidfd: process.pidfd, container: held, source: nil, startedAt: loop.nowMonotonic)
        r.source = try? loop.addIO(fd: process.pidfd, events: .readable, priority: -5,
                                   posting: { _ in .appExited(app) }, to: inbox)
        running[app] = r
        return process.pid
    }

    /// The pidfd became readable: the process exited. Returns its status described, or nil if
    /// it has not exited (or was reaped already).
    @discardableResult
    func reap(_ app: AppID) -> String? {
        guard let r = running[app], let status = ProcessSpawner.reap(pidfd: r.pidfd) else { return nil }
        r.source?.cancel()
        close(r.pidfd)
        running[app] = nil
        // What it started may still run: the caller kills it and cleans up (`kill`, `cleanUp`).
        leftovers[app] = r.container
        return status.description
    }

    /// Containers whose main process is gone, until cleaned up.
    private var leftovers: [AppID: Container] = [:]

    private func container(_ app: AppID) -> Container? { running[app]?.container ?? leftovers[app] }

    func freeze(_ app: AppID) -> String? {
        switch container(app) {
        case .cgroup(let cg)?: return describe { try cg.freeze() }
        case .processGroup(let g)?: return describe { try g.freeze() }
        case nil: return nil
        }
    }

    /// Whether the kernel reports the app's freeze complete (cgroup.events `frozen 1`): the
    /// write to cgroup.freeze only starts it. A process group's SIGSTOP is taken as done.
    func freezeComplete(_ app: AppID) -> Bool {
        guard case .cgroup(let cg)? = container(app) else { return true }
        return (try? cg.events())?.frozen ?? true
    }

    func thaw(_ app: AppID) -> String? {
        switch container(app) {
        case .cgroup(let cg)?: return describe { try cg.thaw() }
        case .processGroup(let g)?: return describe { try g.thaw() }
        case nil: return nil
        }
    }

    /// SIGTERM to every process of the app (thawed first: a frozen process cannot act on it).
    func terminate(_ app: AppID) {
        switch container(app) {
        case .cgroup(let cg)?:
            try? cg.thaw()
            for pid in (try? cg.pids()) ?? [] { Glibc.kill(pid, SIGTERM) }
        case .processGroup(let g)?:
            try? g.terminate(SIGTERM)
            try? g.thaw()
        case nil:
            break
        }
    }

    /// SIGKILL to everything of the app that is left (works on frozen processes too).
    func kill(_ app: AppID) {
        switch container(app) {
        case .cgroup(let cg)?:
            if (try? cg.kill()) == nil { for pid in (try? cg.pids()) ?? [] { Glibc.kill(pid, SIGKILL) } }
        case .processGroup(let g)?:
            try? g.kill()
        case nil:
            break
        }
    }

    /// The app's cgroup goes once its last process has (the kernel refuses it before).
    func cleanUp(_ app: AppID) {
        guard running[app] == nil, let c = leftovers[app] else { return }
        if case .cgroup(let cg) = c {
            if (try? cg.events())?.populated ?? true { return }
            try? cg.remove()
        }
        leftovers[app] = nil
    }

    /// Cgroups still waiting for their last process to go.
    var pendingCleanUps: [AppID] { Array(leftovers.keys) }

    /// Bytes the app's processes hold now: memory.current where the memory controller is
    /// there, else the sum of their Pss.
    func measure(_ app: AppID) -> UInt64? {
        switch container(app) {
        case .cgroup(let cg)?: return try? MemoryReading.of(cgroup: cg)
        case .processGroup(let g)?: return MemoryReading.pss(pids: g.pids())
        case nil: return nil
        }
    }

    /// Waits (blocking: only at shutdown) until every started process has exited or `limit`
    /// has passed, reaping those that did.
    func waitForExits(upTo limit: TimeSpan) {
        let until = Clock.monotonic.now() + UInt64(max(0, limit.microseconds))
        while !running.isEmpty {
            for app in Array(running.keys) { reap(app) }
            let now = Clock.monotonic.now()
            guard !running.isEmpty, now < until else { return }
            var fds = running.values.map { pollfd(fd: $0.pidfd, events: Int16(POLLIN), revents: 0) }
            _ = poll(&fds, nfds_t(fds.count), Int32(min(100, (until - now) / 1000 + 1)))
        }
    }

    /// Where readings come from, for the pressure view.
    var memorySource: String {
        if let base = cgroupBase, access(base + "/memory.current", F_OK) == 0 { return "memory.current" }
        return "Pss"
    }

    /// At exit: the base cgroup, if nothing is left in it.
    func removeBase() {
        guard let base = cgroupBase, running.isEmpty else { return }
        try? Cgroup(path: base).remove()
    }

    private func describe(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch { return "\(error)" }
    }
}

struct LaunchFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
