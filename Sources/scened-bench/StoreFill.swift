import Glibc
import SceneCore
import SceneStore

/// Fills a state directory's database with `count` sessions over 100 apps the way the daemon
/// would have stored them: the engine makes them (Connect straight to the background, as
/// `createSessions` asks over the socket) and the store commits its batches, so rows, events and
/// counters are the store's own. With `archived`, the apps are then terminated, which archives
/// every session. Only the socket round trips are skipped: ~20 s for a million over Connect.
/// Each scene declares 100 kB: a million (100 GB) stay far below the bench's MemoryBudget=1T, which
/// 10 MB would exceed; the first pass would reclaim, and that, not the restore, would be measured.
///
/// `restorationBytes`: each session also saves state-restoration data of that size (JSON), as a
/// scene's SaveState would, before the apps are terminated.
func fillStore(stateDirectory: String, count: Int, archived: Bool, restorationBytes: Int = 0) throws -> Double {
    let start = now()
    mkdir(stateDirectory, 0o700)
    let store = try SceneStore(path: stateDirectory + "/scened.db", durability: .off)
    defer { store.close() }
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    let clock = Timestamp(microseconds: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
    var engine = try LifecycleEngine(restoring: store.load())
    let apps = (0..<100).map { AppID("com.example.app\($0)")! }
    var effects: [Effect] = []
    let restoration: RestorationData? = restorationBytes > 0
        ? .json(#"{"s":""# + String(repeating: "r", count: max(restorationBytes - 8, 0)) + #""}"#) : nil
    func flush() throws {
        guard !effects.isEmpty else { return }
        try store.commit(StoreBatch(effects: effects, engine: engine))
        effects.removeAll(keepingCapacity: true)
    }
    for i in 0..<count {
        let result = try engine.handle(.connect(ConnectRequest(app: apps[i % apps.count], footprint: 100_000,
                                                               background: true)),
                                       now: clock, effects: &effects)
        if let restoration, case .session(let id) = result {
            try engine.handle(.saveState(id, restoration), now: clock, effects: &effects)
        }
        if effects.count >= 50_000 { try flush() }
    }
    try flush()
    if archived {
        for app in apps where engine.apps[app]?.process != .notRunning {
            try engine.handle(.terminate(app), now: clock, effects: &effects)
            try flush()
        }
    }
    return now() - start
}
