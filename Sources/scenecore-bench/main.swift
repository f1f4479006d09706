// Measures the pure engine: commands per second and memory per session.
// Build and run: swift run -c release scenecore-bench [sessions]
import Glibc
import SceneCore

/// CPU time of this thread: on a shared, busy machine wall time mostly measures the other
/// processes, while the engine's own cost shows in the CPU it used.
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func residentBytes() -> Int {
    guard let f = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(f) }
    var size = 0, resident = 0
    _ = withUnsafeMutablePointer(to: &size) { s in
        withUnsafeMutablePointer(to: &resident) { r in
            withVaList([s, r]) { vfscanf(f, "%ld %ld", $0) }
        }
    }
    return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func rate(_ n: Int, _ nanos: UInt64) -> String {
    let perSecond = Double(n) / (Double(nanos) / 1e9)
    return "\(Int(perSecond.rounded())) /s (\(String(Double(nanos) / Double(n))) ns each)"
}

let sessionCount = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let appCount = 100
let cycles = 1_000_000

var engine = LifecycleEngine()
var effects: [Effect] = []
effects.reserveCapacity(64)
var now = Timestamp(microseconds: 1_000_000_000_000)
let apps = (0..<appCount).map { AppID("com.example.app\($0)")! }

// Launch the apps first so connect measures the connect path, not cold launches.
for app in apps {
    try engine.handle(.launch(app), now: now, effects: &effects)
    effects.removeAll(keepingCapacity: true)
}

let rssBefore = residentBytes()
var ids: [SessionID] = []
ids.reserveCapacity(sessionCount)
var eventCount = 0
var t0 = monotonicNanos()
for i in 0..<sessionCount {
    let request = ConnectRequest(app: apps[i % appCount], footprint: 50_000_000, background: true)
    if case .session(let id) = try engine.handle(.connect(request), now: now, effects: &effects) { ids.append(id) }
    eventCount += effects.count
    effects.removeAll(keepingCapacity: true)
}
let connectNanos = monotonicNanos() - t0
let rssAfter = residentBytes()
let idsBytes = ids.capacity * MemoryLayout<SessionID>.stride

// activate <-> background on random sessions among the live ones: each command is one or two
// transitions (background → willResignActive + didEnterBackground counts as two callbacks).
// SceneCore's SplitMix64: a fixed seed keeps runs comparable.
var rng = SplitMix64(seed: 42)
var transitions = 0
var commands = 0
t0 = monotonicNanos()
for _ in 0..<(cycles / 2) {
    let id = ids[Int(rng.next() % UInt64(ids.count))]
    now = now + TimeSpan(microseconds: 1)
    try engine.handle(.activate(id), now: now, effects: &effects)
    for e in effects { if case .event = e { transitions += 1 } }
    effects.removeAll(keepingCapacity: true)
    try engine.handle(.background(id), now: now, effects: &effects)
    for e in effects { if case .event = e { transitions += 1 } }
    effects.removeAll(keepingCapacity: true)
    commands += 2
}
let cycleNanos = monotonicNanos() - t0

// Discard every other session.
let discardCount = ids.count / 2
t0 = monotonicNanos()
for i in stride(from: 0, to: ids.count, by: 2) {
    try engine.handle(.discard(ids[i], cause: .request), now: now, effects: &effects)
    effects.removeAll(keepingCapacity: true)
}
let discardNanos = monotonicNanos() - t0

print("scenecore-bench: pure LifecycleEngine, release build, one thread; rates from the thread's CPU time")
print("conditions: \(sessionCount) sessions over \(appCount) apps (all running), background-connected, footprint 50 MB each")
print("connect:            \(rate(sessionCount, connectNanos))  [\(eventCount / sessionCount) events per connect]")
print("activate/background: \(rate(commands, cycleNanos)) commands; \(rate(transitions, cycleNanos)) transitions")
print("  (a transition is one scene state change with its one callback: Activate from background is two,")
print("   willEnterForeground then didBecomeActive; Background from active is two)")
print("discard:            \(rate(discardCount, discardNanos))")
// Resident growth over the connects, minus the benchmark's own id array.
let perSessionRSS = Double(rssAfter - rssBefore - idsBytes) / Double(sessionCount)
print("memory per session: \(Int(perSessionRSS.rounded())) bytes of RSS growth (SceneSession stride \(MemoryLayout<SceneSession>.stride) bytes)")
print("live sessions now: \(engine.sessions.count), next seq: \(engine.nextSequence)")
