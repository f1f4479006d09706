import Glibc
import ScenedTestSupport
import Testing
@testable import SceneDaemon
import SceneCore
import SystemdKit

/// Runs the loop one dispatch at a time until `done()` holds or `seconds` have passed (so a
/// test cannot hang); returns whether `done()` held.
@discardableResult
private func spin(_ loop: EventLoop, seconds: Double, until done: () -> Bool = { false }) throws -> Bool {
    let deadline = Clock.monotonic.now() + UInt64(seconds * 1_000_000)
    while true {
        if done() { return true }
        let now = Clock.monotonic.now()
        if now >= deadline { return false }
        try loop.runIteration(timeoutUSec: min(deadline - now, 10_000))
    }
}

/// A PSI source on `loop` whose inputs reach it as the daemon routes them (`DaemonInput.psi`);
/// `onChange` gets its level after each change.
private func makePSI(_ loop: EventLoop, _ settings: PSISource.Settings,
                     onChange: ((PressureLevel) -> Void)? = nil) -> PSISource {
    let inbox = LoopInbox<DaemonInput>()
    let psi = PSISource(loop: loop, inbox: inbox, settings: settings)
    inbox.open { [weak psi] input in
        guard case .psi(let i) = input, let psi else { return }
        if psi.handle(i) { onChange?(psi.level) }
    }
    return psi
}

/// Tries one trigger on a pressure file the way §4.2 says (O_RDWR|O_NONBLOCK, NUL-terminated):
/// nil on success, else errno.
private func probeTrigger(_ path: String, _ spec: String) -> Int32? {
    let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { return errno }
    defer { close(fd) }
    var bytes = Array(spec.utf8)
    bytes.append(0)
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    return n < 0 ? errno : nil
}

/// How many of this process's descriptors are open on `path`.
private func openDescriptors(on path: String) -> Int {
    guard let d = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(d) }
    var count = 0
    while let entry = readdir(d) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/" + name, &buffer, buffer.count - 1)
        guard n > 0 else { continue }
        if String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == path { count += 1 }
    }
    return count
}

private func pressureText(some: UInt64, full: UInt64) -> String {
    "some avg10=0.00 avg60=0.00 avg300=0.00 total=\(some)\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=\(full)\n"
}

/// Removes the test cgroups of earlier runs that died before cleaning up (their pid is gone).
private func removeStaleTestCgroups(under base: String) {
    guard let d = opendir(base) else { return }
    var stale: [String] = []
    while let entry = readdir(d) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        let parts = name.split(separator: "-")
        guard name.hasPrefix("scened-dtests-"), parts.count == 4, let pid = Int32(parts[2]) else { continue }
        if kill(pid, 0) != 0 && errno == ESRCH { stale.append(base + "/" + name) }
    }
    closedir(d)
    for path in stale { rmdir(path) }
}

/// Settings for a fake file: a 200 ms window polled every 50 ms, so the hold is 400 ms.
private func fakeSettings(_ path: String) -> PSISource.Settings {
    PSISource.Settings(path: path, warningStallUSec: 100_000, criticalStallUSec: 100_000, windowUSec: 200_000,
                       holdWindows: 2, pollIntervalUSec: 50_000)
}

/// The window a trigger on `path` can use here: the preferred one, or the unprivileged 2 s
/// form (§4.3). nil (with the reason) when no trigger can be armed at all.
private func armableWindow(_ path: String, preferred: UInt64) -> (window: UInt64?, reason: String) {
    if probeTrigger(path, "some 100000 \(preferred)") == nil { return (preferred, "privileged: \(preferred) µs accepted") }
    if let e = probeTrigger(path, "some 200000 2000000") {
        return (nil, "a 2 s trigger on \(path) is refused: \(errnoText(e))")
    }
    return (2_000_000, "unprivileged: only 2 s multiples")
}

@Suite("PSI pressure source")
struct PSISourceTests {
    @Test("real /proc/pressure/memory: a 1 s window falls back to the unprivileged 2 s trigger")
    func realProcPressure() throws {
        let path = "/proc/pressure/memory"
        guard access(path, F_OK) == 0 else {
            print("PSISourceTests.realProcPressure: skipped: \(path) does not exist (no CONFIG_PSI or psi=0)")
            return
        }
        let (expected, why) = armableWindow(path, preferred: 1_000_000)
        guard let expected else {
            print("PSISourceTests.realProcPressure: skipped: \(why)")
            return
        }
        print("PSISourceTests.realProcPressure: \(why)")
        let loop = try EventLoop()
        let psi = makePSI(loop, PSISource.Settings(path: path, warningStallUSec: 100_000,
                                                                      criticalStallUSec: 100_000, windowUSec: 1_000_000))
        psi.start()
        #expect(psi.mode == .triggers(windowUSec: expected))
        // Two triggers, each on its own descriptor.
        #expect(openDescriptors(on: path) == 2)
        // The loop runs (bounded by a timer that exits it) with the triggers armed: no error
        // event takes the source down.
        try loop.addTimer(at: Clock.monotonic.now() + 300_000, accuracy: 1) { loop.exit(code: 0) }
        #expect(try loop.run() == 0)
        #expect(psi.mode == .triggers(windowUSec: expected))
        psi.stop()
        #expect(openDescriptors(on: path) == 0)
    }

    @Test("a fake pressure file is polled; stall growth raises the level, which drops after the hold")
    func fakeFilePolling() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var some: UInt64 = 1_000
        var full: UInt64 = 500
        let path = try dir.write("memory.pressure", pressureText(some: some, full: full))
        let loop = try EventLoop()
        var changes: [PressureLevel] = []
        let psi = makePSI(loop, fakeSettings(path)) { changes.append($0) }
        psi.start()
        defer { psi.stop() }
        #expect(psi.mode == .polling)

        // Idle for more than a window: normal.
        try spin(loop, seconds: 0.3)
        #expect(psi.level == .normal)

        // Growth below the threshold within a window: still normal.
        some += 50_000
        try writeTextFile(path, pressureText(some: some, full: full))
        try spin(loop, seconds: 0.4)
        #expect(psi.level == .normal)
        #expect(changes.isEmpty)

        // "some" grows by more than the warning stall: warning; it holds two windows past the
        // last growth seen, then drops.
        some += 150_000
        try writeTextFile(path, pressureText(some: some, full: full))
        #expect(try spin(loop, seconds: 1) { psi.level != .normal })
        #expect(psi.level == .warning)
        let rose = Clock.monotonic.now()
        #expect(try spin(loop, seconds: 2) { psi.level == .normal })
        let held = Clock.monotonic.now() - rose
        #expect(held >= 350_000, "dropped after \(held) µs, before the 400 ms hold")
        #expect(changes == [.warning, .normal])

        // "full" grows: critical, then back to normal.
        some += 150_000
        full += 150_000
        try writeTextFile(path, pressureText(some: some, full: full))
        #expect(try spin(loop, seconds: 1) { psi.level != .normal })
        #expect(psi.level == .critical)
        #expect(try spin(loop, seconds: 2) { psi.level == .normal })
        #expect(changes == [.warning, .normal, .critical, .normal])

        // Counters that go backwards (the file was replaced) are a new history, not pressure
        // (and not an arithmetic overflow).
        try writeTextFile(path, pressureText(some: 10, full: 5))
        try spin(loop, seconds: 0.3)
        try writeTextFile(path, pressureText(some: 20, full: 5))
        try spin(loop, seconds: 0.2)
        #expect(psi.level == .normal)
        #expect(psi.mode == .polling)
        #expect(changes == [.warning, .normal, .critical, .normal])
    }

    @Test("a missing file: unavailable, and a retry succeeds once it appears")
    func missingFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/memory.pressure"
        let loop = try EventLoop()
        let psi = makePSI(loop, fakeSettings(path))
        psi.start()
        defer { psi.stop() }
        #expect(psi.mode == .unavailable(errnoText(ENOENT)))
        try spin(loop, seconds: 0.3)
        #expect(psi.mode == .unavailable(errnoText(ENOENT)))
        #expect(psi.level == .normal)

        try writeTextFile(path, pressureText(some: 0, full: 0))
        // The first retry comes a second after the start.
        #expect(try spin(loop, seconds: 3) { psi.mode != .unavailable(errnoText(ENOENT)) })
        #expect(psi.mode == .polling)
        // And it works: growth is seen.
        try spin(loop, seconds: 0.25)
        try writeTextFile(path, pressureText(some: 300_000, full: 0))
        #expect(try spin(loop, seconds: 1) { psi.level == .warning })
    }

    @Test("a source freed with its hold and retry timers armed leaves nothing to fire")
    func freedWithTimersArmed() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.write("memory.pressure", pressureText(some: 0, full: 0))
        let loop = try EventLoop()
        var held: PSISource? = makePSI(loop, fakeSettings(path))
        held!.start()
        try spin(loop, seconds: 0.25)
        try writeTextFile(path, pressureText(some: 300_000, full: 0))
        #expect(try spin(loop, seconds: 1) { held!.level == .warning })
        // Hold timer armed; a missing file's source has its retry timer armed.
        var retrying: PSISource? = makePSI(loop, fakeSettings(dir.path + "/absent"))
        retrying!.start()
        held = nil
        retrying = nil
        // Past both deadlines: a timer calling into a freed source would crash here.
        try spin(loop, seconds: 1.3)
    }

    @Test("POLLERR on a removed cgroup's memory.pressure: source gone, level normal, not pressure")
    func removedCgroup() throws {
        let base = "/sys/fs/cgroup/unified"
        let probe = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard probe >= 0 else {
            print("PSISourceTests.removedCgroup: skipped: \(base): \(errnoText())")
            return
        }
        let isCgroup2 = FileSystemType.magic(of: probe) == FileSystemType.cgroup2
        close(probe)
        guard isCgroup2 else {
            print("PSISourceTests.removedCgroup: skipped: \(base) is not a cgroup v2 mount")
            return
        }
        removeStaleTestCgroups(under: base)
        let cgroup = base + "/scened-dtests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(cgroup, 0o755) == 0 else {
            print("PSISourceTests.removedCgroup: skipped: cannot create a cgroup (\(cgroup)): \(errnoText())")
            return
        }
        var removed = false
        defer { if !removed { rmdir(cgroup) } }
        let path = cgroup + "/memory.pressure"
        let (expected, why) = armableWindow(path, preferred: 1_000_000)
        guard let expected else {
            print("PSISourceTests.removedCgroup: skipped: \(why)")
            return
        }

        let loop = try EventLoop()
        var changes: [PressureLevel] = []
        let psi = makePSI(loop, PSISource.Settings(path: path, warningStallUSec: 100_000,
                                                                      criticalStallUSec: 100_000, windowUSec: 1_000_000)) { changes.append($0) }
        psi.start()
        defer { psi.stop() }
        #expect(psi.mode == .triggers(windowUSec: expected))
        #expect(openDescriptors(on: path) == 2)
        try spin(loop, seconds: 0.2)
        #expect(psi.mode == .triggers(windowUSec: expected))

        guard rmdir(cgroup) == 0 else {
            Issue.record("rmdir \(cgroup): \(errnoText())")
            return
        }
        removed = true
        #expect(try spin(loop, seconds: 2) { psi.mode != .triggers(windowUSec: expected) })
        #expect(psi.mode == .unavailable("source gone"))
        #expect(psi.level == .normal)
        #expect(changes.isEmpty, "the error was taken as pressure: \(changes)")
        #expect(openDescriptors(on: path) == 0)

        // The re-open with backoff finds nothing; still not pressure.
        #expect(try spin(loop, seconds: 2) { psi.mode != .unavailable("source gone") })
        #expect(psi.mode == .unavailable(errnoText(ENOENT)))
        #expect(psi.level == .normal)
        #expect(changes.isEmpty)
    }
}
