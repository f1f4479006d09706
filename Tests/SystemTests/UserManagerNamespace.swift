import Foundation
import Glibc

/// One private environment for the whole system test: a mount + PID namespace (made by
/// `unshare`) holding a journald and a `systemd --user` of its own, with scened's units
/// installed the way packaging/install lays them out.
///
/// The namespace's first process runs `holderScript`: it sets everything up, writes `info`
/// into the scratch directory, then waits on its stdin (a pipe from this process). A line or
/// EOF (this process died) makes it tear down: `systemctl --user exit`, journald stopped, any
/// straggler SIGKILLed, its cgroups removed. Being PID 1 of the namespace, its exit also
/// makes the kernel kill whatever is left. Nothing of this touches the host: /run,
/// /var/log/journal, the catalog and /etc (a private copy) are tmpfs or bind mounts inside the
/// namespace; only the cgroups are shared, and they carry the holder's host PID in their name.
///
/// Commands run inside through `nsenter -t <holder> -m -p`; Varlink clients of this process
/// reach the daemon's socket as /proc/<holder>/root/run/scened/io.scened.Manager.
final class UserManagerNamespace {
    static let runtimeDirectory = "/run/user/0"
    static let configHome = "/run/user/0/config"
    static let unitDirectory = "/run/user/0/config/systemd/user"
    /// packaging/install --destdir target inside the namespace (the service's PrivateTmp hides /tmp).
    static let stage = "/run/systest/stage"
    static let socketInside = "/run/scened/io.scened.Manager"
    static let tools = ["/usr/bin/unshare", "/usr/bin/nsenter", "/lib/systemd/systemd", "/lib/systemd/systemd-journald",
                        "/bin/systemctl", "/bin/journalctl", "/bin/systemd-sysusers", "/usr/bin/timeout", "/usr/bin/setpriv"]

    let scratch: ScratchDirectory
    private let unsharePID: pid_t
    private var controlFD: Int32
    private(set) var hostPID: pid_t = 0
    private(set) var managerPID = ""
    private(set) var cgroup = ""
    private(set) var hierarchies: [String] = []
    /// The unprivileged user whose own `systemd --user` runs beside root's, when asked for.
    private(set) var desk: (name: String, uid: uid_t, gid: gid_t, managerPID: String)?
    private var finished = false

    var holderLog: String { readTextFile(scratch.file("holder.log")) ?? "" }
    var socketPath: String { "/proc/\(hostPID)/root\(Self.socketInside)" }

    /// Starts the namespace; returns once journald and the user manager are up and scened's units
    /// are installed (not started), or throws with the holder's log. With `deskUser`, that user
    /// (made with systemd-sysusers inside) also gets a user manager of its own, as logind would
    /// start it: its cgroup user@UID.service owned by it, its runtime directory /run/user/UID.
    init(packageRoot: String, binaries: String, dropIn: String, deskUser: String? = nil) throws {
        scratch = try ScratchDirectory(prefix: "scened-systest")
        try writeTextFile(scratch.file("holder.sh"), Self.holderScript)
        try writeTextFile(scratch.file("50-systest.conf"), dropIn)

        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw HarnessError("pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC) // dup2'd onto the child's stdin, which drops the flag
        controlFD = fds[1]
        let arguments = ["/usr/bin/unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
                         "/bin/sh", scratch.file("holder.sh"), scratch.path, packageRoot, binaries, deskUser ?? ""]
        let spawned = spawn(arguments, stdinFD: fds[0], stdoutPath: scratch.file("holder.log"),
                            stderrPath: scratch.file("holder.log"))
        close(fds[0])
        switch spawned {
        case .success(let pid): unsharePID = pid
        case .failure(let error):
            close(controlFD)
            scratch.remove()
            throw error
        }

        // Wait for `info` (ready) or the holder's exit (setup failed).
        var exited = false
        let ready = waitUntil(seconds: 60, interval: 0.02) {
            if fileExists(scratch.file("info")) { return true }
            var status: Int32 = 0
            if waitpid(unsharePID, &status, WNOHANG) == unsharePID { exited = true; return true }
            return false
        }
        guard ready, !exited, let info = readTextFile(scratch.file("info")) else {
            let log = holderLog
            if !exited { _ = teardown() } else { finished = true; close(controlFD) }
            scratch.remove()
            throw HarnessError("the test namespace did not come up (\(exited ? "holder exited" : "timed out")):\n\(log.suffix(6000))")
        }
        let values = parseProperties(info)
        hostPID = pid_t(values["hostpid"] ?? "") ?? 0
        managerPID = values["managerpid"] ?? ""
        cgroup = values["cgroup"] ?? ""
        hierarchies = (values["hierarchies"] ?? "").split(separator: " ").map(String.init)
        guard hostPID > 0 else { throw HarnessError("bad info file: \(info)") }
        if let deskUser {
            guard let uid = uid_t(values["deskuid"] ?? ""), let gid = gid_t(values["deskgid"] ?? ""), uid != 0 else {
                throw HarnessError("bad info file (no desk user): \(info)")
            }
            desk = (deskUser, uid, gid, values["deskpid"] ?? "")
        }
    }

    deinit {
        if !finished { _ = teardown() }
    }

    // MARK: - Running things inside

    static let environment = [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/run/systest/home",
        "XDG_RUNTIME_DIR=\(runtimeDirectory)", "XDG_CONFIG_HOME=\(configHome)", "LANG=C.UTF-8",
        "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0", "SYSTEMD_URLIFY=0",
    ]

    func exec(_ arguments: [String], timeout: Double = 60) -> CommandResult {
        runCommand(["/usr/bin/nsenter", "-t", String(hostPID), "-m", "-p", "--wd=/", "--", "/usr/bin/env", "-i"]
                   + Self.environment + arguments, timeout: timeout)
    }

    func sh(_ script: String, timeout: Double = 60) -> CommandResult {
        exec(["/bin/sh", "-c", script], timeout: timeout)
    }

    /// The desk user's runtime directory, its user manager's %t.
    var deskRuntimeDirectory: String { "/run/user/\(desk?.uid ?? 0)" }
    var deskUnitDirectory: String { deskRuntimeDirectory + "/config/systemd/user" }

    /// `arguments` as the desk user, in the environment its session would have.
    func asDesk(_ arguments: [String], timeout: Double = 60) -> CommandResult {
        guard let desk else { return CommandResult(arguments: arguments, status: -1, stdout: "", stderr: "no desk user", timedOut: false) }
        let home = "/run/systest/\(desk.name)"
        return exec(["/usr/bin/setpriv", "--reuid=\(desk.uid)", "--regid=\(desk.gid)", "--init-groups", "/usr/bin/env",
                     "HOME=\(home)", "XDG_RUNTIME_DIR=\(deskRuntimeDirectory)", "XDG_CONFIG_HOME=\(deskRuntimeDirectory)/config",
                     "XDG_STATE_HOME=\(deskRuntimeDirectory)/state"] + arguments, timeout: timeout)
    }

    /// systemctl --user against the desk user's manager, as that user.
    @discardableResult
    func deskSystemctl(_ arguments: String..., timeout: Double = 60) -> CommandResult {
        asDesk(["systemctl", "--user", "--no-pager"] + arguments, timeout: timeout)
    }

    func deskShow(_ unit: String, _ properties: [String]) -> [String: String] {
        parseProperties(asDesk(["systemctl", "--user", "show", unit] + properties.flatMap { ["-p", $0] }).stdout)
    }

    @discardableResult
    func systemctl(_ arguments: String..., timeout: Double = 60) -> CommandResult {
        exec(["systemctl", "--user", "--no-pager"] + arguments, timeout: timeout)
    }

    func show(_ unit: String, _ properties: [String]) -> [String: String] {
        let result = exec(["systemctl", "--user", "show", unit] + properties.flatMap { ["-p", $0] })
        return parseProperties(result.stdout)
    }

    func journal(_ arguments: [String], timeout: Double = 60) -> CommandResult {
        exec(["journalctl", "--no-pager", "-q"] + arguments, timeout: timeout)
    }

    /// journalctl -o json with `matches`, entries after `sinceMonotonic` (µs) if given.
    func journalEntries(_ matches: [String], sinceMonotonic: UInt64 = 0) -> [[String: Any]] {
        let result = journal(["-o", "json"] + matches)
        return parseJournalJSON(result.stdout).filter {
            (UInt64($0["__MONOTONIC_TIMESTAMP"] as? String ?? "") ?? 0) >= sinceMonotonic
        }
    }

    /// How many entries match (one line each with -o cat: scened's messages are single lines).
    func countEntries(_ matches: [String]) -> Int {
        journal(["-o", "cat"] + matches).stdout.utf8.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    }

    /// The user manager's own messages about `unit` (its debug log), in order.
    func managerMessages(_ unit: String, sinceMonotonic: UInt64 = 0) -> [(monotonic: UInt64, message: String)] {
        journalEntries(["_PID=\(managerPID)", "USER_UNIT=\(unit)"], sinceMonotonic: sinceMonotonic).map {
            (UInt64($0["__MONOTONIC_TIMESTAMP"] as? String ?? "") ?? 0, $0["MESSAGE"] as? String ?? "")
        }
    }

    /// Writes `text` to `path` inside the namespace.
    func writeFile(_ path: String, _ text: String) throws {
        let staging = scratch.file("staged-\(UInt32.random(in: 0...UInt32.max))")
        try writeTextFile(staging, text)
        defer { unlink(staging) }
        let result = exec(["/bin/sh", "-c", "mkdir -p \"$(dirname \"$2\")\" && cp \"$1\" \"$2\"", "sh", staging, path])
        guard result.succeeded else { throw HarnessError("cannot write \(path) in the namespace:\n\(result)") }
    }

    func removeFile(_ path: String) {
        _ = exec(["rm", "-f", path])
    }

    // MARK: - Teardown

    /// Stops everything; returns the problems found (empty when the host is as it was).
    func teardown() -> [String] {
        guard !finished else { return [] }
        finished = true
        var problems: [String] = []
        _ = write(controlFD, "exit\n", 5)
        close(controlFD)
        let (status, timedOut) = waitForExit(unsharePID, timeout: 45)
        if timedOut { problems.append("the namespace holder did not finish within 45 s and was killed") }
        if status != 0 { problems.append("the namespace holder exited with status \(status)") }
        let log = holderLog
        if !log.contains("teardown done (status 0)") && !log.contains("teardown done (status 143)") {
            problems.append("the holder did not report a clean teardown")
        }
        // Fallback when the holder could not clean up: its processes died with the PID
        // namespace, so the cgroups are empty and can go.
        for hierarchy in hierarchies where !cgroup.isEmpty {
            let top = "/sys/fs/cgroup/\(hierarchy)/\(cgroup.split(separator: "/").first ?? "")"
            guard fileExists(top) else { continue }
            problems.append("cgroup \(top) was left behind; removing it")
            _ = runCommand(["/usr/bin/find", top, "-depth", "-type", "d", "-exec", "rmdir", "{}", ";"])
            if fileExists(top) { problems.append("cgroup \(top) could not be removed") }
        }
        if !problems.isEmpty { problems.append("holder log:\n" + log.suffix(4000)) }
        return problems
    }

    /// Run by /bin/sh as the namespace's PID 1. Arguments: scratch dir, package root, bin dir.
    static let holderScript = #"""
    set -eu
    work=$1 src=$2 bin=$3 desk=${4:-}
    log() { echo "holder: $*" >&2; }
    fail() { echo "SYSTEST-SETUP-ERROR: $*" >&2; exit 70; }

    # /proc is still the host's: this is our host PID (the name of our cgroups).
    read -r hostpid _ < /proc/self/stat
    mount -t proc proc /proc || fail "cannot mount a private /proc"

    cg=scened-systest-$hostpid.slice
    ucg=$cg/user-0.slice/user@0.service
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then hier=.
    elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ] && [ -d /sys/fs/cgroup/systemd ]; then hier="systemd unified"
    elif [ -d /sys/fs/cgroup/systemd ]; then hier=systemd
    else fail "no cgroup hierarchy that systemd can use under /sys/fs/cgroup"
    fi

    SDPID= JPID= DPID= duid= dgid=
    # Runs "$@" as the desk user, in the environment its session would have.
    as_desk() {
        setpriv --reuid="$duid" --regid="$dgid" --init-groups env -i PATH="$PATH" HOME="/run/systest/$desk" \
            XDG_RUNTIME_DIR="/run/user/$duid" XDG_CONFIG_HOME="/run/user/$duid/config" \
            XDG_STATE_HOME="/run/user/$duid/state" XDG_DATA_HOME="/run/user/$duid/data" \
            XDG_CACHE_HOME="/run/user/$duid/cache" SYSTEMD_GENERATOR_PATH=/run/systest/empty \
            SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/systest/empty "$@"
    }
    # Waits up to $2 s for process $1 to end (a zombie counts as ended).
    await_exit() {
        i=0
        while [ -e "/proc/$1" ] && ! grep -q ') Z ' "/proc/$1/stat" 2>/dev/null; do
            i=$((i + 1)); [ $i -ge $(($2 * 20)) ] && return 1; sleep 0.05
        done
        return 0
    }
    cleanup() {
        rc=$?
        set +e
        trap - EXIT
        if [ -n "$DPID" ]; then
            as_desk timeout 10 systemctl --user exit >/dev/null 2>&1
            await_exit "$DPID" 20 || { log "the desk user's systemd --user did not exit: SIGKILL"; kill -9 "$DPID"; }
            wait "$DPID" 2>/dev/null
        fi
        if [ -n "$SDPID" ]; then
            XDG_RUNTIME_DIR=/run/user/0 timeout 10 systemctl --user exit >/dev/null 2>&1
            await_exit "$SDPID" 20 || { log "systemd --user did not exit: SIGKILL"; kill -9 "$SDPID"; }
            wait "$SDPID" 2>/dev/null
        fi
        if [ -n "$JPID" ]; then
            kill "$JPID"; await_exit "$JPID" 10 || kill -9 "$JPID"; wait "$JPID" 2>/dev/null
        fi
        for h in $hier; do
            [ -d "/sys/fs/cgroup/$h/$cg" ] || continue
            for f in $(find "/sys/fs/cgroup/$h/$cg" -name cgroup.procs); do
                for p in $(cat "$f"); do
                    [ "$p" = $$ ] || [ "$p" = 0 ] || { log "left over: process $p in ${f%/cgroup.procs}: SIGKILL"; kill -9 "$p"; }
                done
            done
        done
        for h in $hier; do
            [ -d "/sys/fs/cgroup/$h/$cg" ] || continue
            n=0
            until find "/sys/fs/cgroup/$h/$cg" -depth -type d -exec rmdir {} \; 2>/dev/null; [ ! -d "/sys/fs/cgroup/$h/$cg" ]; do
                n=$((n + 1)); [ $n -gt 50 ] && { log "cannot remove /sys/fs/cgroup/$h/$cg"; rc=75; break; }; sleep 0.1
            done
        done
        log "teardown done (status $rc)"
        exit $rc
    }
    trap cleanup EXIT
    trap 'exit 143' TERM INT HUP

    # Runtime state, journal, catalog database: tmpfs, in this namespace only.
    mount -t tmpfs -o mode=0755 tmpfs /run || fail "cannot mount a tmpfs on /run"
    mkdir -p /run/systemd/system /run/systemd/journald.conf.d /run/systest/empty /run/systest/home /run/lock
    mkdir -m 0755 /run/user; mkdir -m 0700 /run/user/0
    [ ! -d /var/log/journal ] || mount -t tmpfs -o mode=2755 tmpfs /var/log/journal
    printf '%s\n' '[Journal]' Storage=volatile ReadKMsg=no ForwardToSyslog=no ForwardToKMsg=no \
        ForwardToConsole=no ForwardToWall=no > /run/systemd/journald.conf.d/zz-scened-systest.conf

    # The project's install script, into a staging root inside the namespace.
    sh "$src/packaging/install" --destdir /run/systest/stage --build-dir "$bin" >&2 || fail "packaging/install failed"
    stage=/run/systest/stage/usr

    # The service user and the socket's group, from the installed sysusers.d file, into a
    # namespace-private copy of /etc. The whole directory, not /etc/passwd and friends alone:
    # a host useradd or userdel (other tests make users) replaces /etc/passwd by a rename, and
    # a rename over a file bound in another mount namespace detaches that bind mount, leaving
    # this namespace with the host's file and without its users.
    mkdir -p /run/systest/root/etc
    cp -a /etc/. /run/systest/root/etc/ || fail "cannot copy /etc"
    systemd-sysusers --root=/run/systest/root "$stage/lib/sysusers.d/scened.conf" >&2 || fail "systemd-sysusers failed"
    if [ -n "$desk" ]; then
        printf 'u %s - "scened system test desk user" /run/systest/%s\n' "$desk" "$desk" > /run/systest/desk.conf
        systemd-sysusers --root=/run/systest/root /run/systest/desk.conf >&2 || fail "systemd-sysusers (desk user) failed"
    fi
    mount --bind /run/systest/root/etc /etc || fail "cannot bind the private /etc"

    # The catalog: the installed file next to the host's, compiled into a private database.
    [ -d /usr/lib/systemd/catalog ] || fail "/usr/lib/systemd/catalog is missing (is systemd installed?)"
    mkdir -p /run/systest/catalog
    cp -p /usr/lib/systemd/catalog/*.catalog /run/systest/catalog/ 2>/dev/null || true
    mount -t tmpfs -o mode=0755 tmpfs /usr/lib/systemd/catalog
    cp -p /run/systest/catalog/*.catalog /usr/lib/systemd/catalog/ 2>/dev/null || true
    cp "$stage/lib/systemd/catalog/scened.catalog" /usr/lib/systemd/catalog/
    if [ -d /var/lib/systemd/catalog ]; then mount -t tmpfs -o mode=0755 tmpfs /var/lib/systemd/catalog
    elif [ -d /var/lib/systemd ]; then mount -t tmpfs -o mode=0755 tmpfs /var/lib/systemd; mkdir /var/lib/systemd/catalog
    else fail "/var/lib/systemd is missing (is systemd installed?)"
    fi
    journalctl --update-catalog >&2 || fail "journalctl --update-catalog failed"

    # The units, for the user manager, with the test's drop-in.
    export XDG_RUNTIME_DIR=/run/user/0 XDG_CONFIG_HOME=/run/user/0/config HOME=/run/systest/home
    export XDG_STATE_HOME=/run/user/0/state XDG_DATA_HOME=/run/user/0/data XDG_CACHE_HOME=/run/user/0/cache
    # No generators: they would log to the host's kmsg and add nothing here.
    export SYSTEMD_GENERATOR_PATH=/run/systest/empty SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/systest/empty
    units=$XDG_CONFIG_HOME/systemd/user
    mkdir -p "$units/scened.service.d"
    cp "$stage/lib/systemd/system/scened.service" "$stage/lib/systemd/system/scened.socket" "$units/"
    cp "$work/50-systest.conf" "$units/scened.service.d/50-systest.conf"

    # Cgroups: user@0.service (the shape journald needs to attribute _SYSTEMD_USER_UNIT=), under
    # a top-level slice named after our host PID. We (PID 1 of the namespace, whose cgroup
    # journald takes as the root) stay where we are.
    for h in $hier; do
        mkdir -p "/sys/fs/cgroup/$h/$ucg" || fail "cannot create cgroup /sys/fs/cgroup/$h/$ucg (needs root with write access to the cgroup file system)"
    done

    SYSTEMD_LOG_TARGET=console /lib/systemd/systemd-journald </dev/null >>"$work/journald.log" 2>&1 &
    JPID=$!
    i=0
    while [ ! -S /run/systemd/journal/socket ]; do
        i=$((i + 1)); [ $i -le 1000 ] || fail "journald did not start: $(cat "$work/journald.log")"; sleep 0.01
    done

    # The manager moves itself into its cgroup first, then logs (debug) to our journald.
    /bin/sh -c 'for h in $1; do echo $$ > "/sys/fs/cgroup/$h/$2/cgroup.procs" || exit 71; done
        exec /lib/systemd/systemd --user --log-target=journal --log-level=debug' sh "$hier" "$ucg" \
        </dev/null >>"$work/manager.log" 2>&1 &
    SDPID=$!
    i=0
    until [ "$(systemctl --user is-system-running 2>/dev/null)" = running ]; do
        i=$((i + 1))
        [ $i -le 1000 ] || fail "systemd --user did not reach 'running': $(systemctl --user is-system-running 2>&1); $(cat "$work/manager.log")"
        await_exit "$SDPID" 0 && fail "systemd --user exited: $(cat "$work/manager.log")"
        sleep 0.02
    done

    if [ -n "$desk" ]; then
        duid=$(id -u "$desk") dgid=$(id -g "$desk")
        dcg=$cg/user-$duid.slice/user@$duid.service
        mkdir -m 0700 "/run/user/$duid" "/run/systest/$desk"
        mkdir -p "/run/user/$duid/config/systemd/user"
        cp "$stage/lib/systemd/user/scened.service" "$stage/lib/systemd/user/scened.socket" "/run/user/$duid/config/systemd/user/"
        chown -R "$duid:$dgid" "/run/user/$duid" "/run/systest/$desk"
        # What PID 1 does for user@.service (Delegate=yes): the cgroup and the files that
        # manage its processes and subtree belong to the user.
        for h in $hier; do
            mkdir -p "/sys/fs/cgroup/$h/$dcg" || fail "cannot create cgroup /sys/fs/cgroup/$h/$dcg"
            for f in "" /cgroup.procs /cgroup.threads /cgroup.subtree_control /tasks; do
                [ ! -e "/sys/fs/cgroup/$h/$dcg$f" ] || chown "$duid:$dgid" "/sys/fs/cgroup/$h/$dcg$f" || fail "cannot chown $dcg$f"
            done
        done
        /bin/sh -c 'for h in $1; do echo $$ > "/sys/fs/cgroup/$h/$2/cgroup.procs" || exit 71; done; shift 2; exec "$@"' \
            sh "$hier" "$dcg" setpriv --reuid="$duid" --regid="$dgid" --init-groups env -i PATH="$PATH" \
            HOME="/run/systest/$desk" XDG_RUNTIME_DIR="/run/user/$duid" XDG_CONFIG_HOME="/run/user/$duid/config" \
            XDG_STATE_HOME="/run/user/$duid/state" XDG_DATA_HOME="/run/user/$duid/data" XDG_CACHE_HOME="/run/user/$duid/cache" \
            SYSTEMD_GENERATOR_PATH=/run/systest/empty SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/systest/empty \
            /lib/systemd/systemd --user --log-target=journal --log-level=debug </dev/null >>"$work/desk-manager.log" 2>&1 &
        DPID=$!
        i=0
        until [ "$(as_desk systemctl --user is-system-running 2>/dev/null)" = running ]; do
            i=$((i + 1))
            [ $i -le 1000 ] || fail "the desk user's systemd --user did not reach 'running': $(as_desk systemctl --user is-system-running 2>&1); $(cat "$work/desk-manager.log")"
            await_exit "$DPID" 0 && fail "the desk user's systemd --user exited: $(cat "$work/desk-manager.log")"
            sleep 0.02
        done
    fi

    printf 'hostpid=%s\nmanagerpid=%s\njournaldpid=%s\ncgroup=%s\nhierarchies=%s\ndeskuid=%s\ndeskgid=%s\ndeskpid=%s\n' \
        "$hostpid" "$SDPID" "$JPID" "$ucg" "$hier" "$duid" "$dgid" "$DPID" > "$work/info.tmp"
    mv "$work/info.tmp" "$work/info"
    log "ready"
    read -r _ || true
    log "tearing down"
    """#
}
