import Glibc

/// RSS with `savedCount` archived sessions holding 16 KiB of restoration data
/// each, beside the same sessions without any, side by side in one run; then what reading a
/// payload back costs: GetSession of a session whose data is in the store, beside one whose
/// data is in memory.
func savedFigures() throws {
    let count = savedCount
    say("\n== saved data: RSS with \(count) archived sessions, with and without 16 KiB of restoration data each (Durability=full; 0.3 s after READY, and after reconnecting one) ==")
    say("target (issue 16): RSS with 16 KiB each ≤ 1.5 × RSS with none")
    var rss: [Int: Int] = [:]
    for bytes in [0, 16_384] {
        let dir = makeDirectory()
        defer { removeTree(dir) }
        let daemon = BenchDaemon(binary: binary, directory: dir)
        let filled = try fillStore(stateDirectory: daemon.stateDirectory, count: count, archived: true,
                                   restorationBytes: bytes)
        try daemon.start(config: config(durability: "full"))
        defer { daemon.stop() }
        let ready = daemon.readyAfter
        usleep(300_000)
        let atReady = daemon.residentBytes()
        // A reconnection reads its data back and hands it on; GetSession shows it.
        _ = try roundTrips(daemon, method: "Activate", parameters: ["session": "s1"], count: 1)
        _ = try roundTrips(daemon, method: "Background", parameters: ["session": "s1"], count: 1)
        let shown = try roundTrips(daemon, method: "GetSession", parameters: ["session": "s2"], count: 2_000)
        usleep(300_000)
        let after = daemon.residentBytes()
        rss[bytes] = max(atReady, after)
        say("\(bytes) B each: filled in \(ms(filled)); READY \(ms(ready)); RSS \(mb(atReady)) at READY, \(mb(after)) after; "
            + "GetSession of an archived session: median \(String(format: "%.1f", shown.sorted()[shown.count / 2] * 1e6)) µs a call")
    }
    if let none = rss[0], let with = rss[16_384] {
        let ratio = Double(with) / Double(none)
        say("  → RSS with 16 KiB each / with none = \(String(format: "%.2f", ratio)) vs ≤ 1.50: \(ratio <= 1.5 ? "met" : "MISSED")")
    }
}
