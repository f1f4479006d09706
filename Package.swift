// swift-tools-version:6.0
// Swift 6 language mode throughout (tools version 6.0 defaults to it).
import PackageDescription

let package = Package(
    name: "scened",
    products: [
        .executable(name: "scened", targets: ["scened"]),
        .executable(name: "scenectl", targets: ["scenectl"]),
        .library(name: "SceneCore", targets: ["SceneCore"]),
        // UIKit-style app side of io.scened.App: ApplicationDelegate, SceneDelegate, SceneApplication.
        .library(name: "SceneClient", targets: ["SceneClient"]),
        .executable(name: "scene-notes", targets: ["scene-notes"]),
        .executable(name: "varlink-certification", targets: ["varlink-certification"]),
    ],
    targets: [
        // C libraries from Debian, reached through system-library modules.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // fork → exec of app processes (the child side in C: only async-signal-safe calls after
        // fork in a multithreaded parent).
        .target(name: "CProcessShim"),
        // Starting, freezing, ending and measuring app processes: cgroup v2, process groups, /proc.
        .target(name: "ProcessKit", dependencies: ["CProcessShim"]),

        // Pure core: no I/O, no clocks, no globals.
        .target(name: "SceneCore"),
        // Wire protocol: JSON, framing, connection state machine, IDL, sockets, client.
        .target(name: "Varlink"),
        // Thin face over libsystemd.
        .target(name: "SystemdKit", dependencies: ["CSystemd"]),
        // The Varlink interface texts (io.scened.Manager, io.scened.Testing), shared by the daemon
        // that serves them and scenectl that calls them; shipped as interfaces/*.varlink too.
        .target(name: "SceneInterface"),
        // The project's one lock (a pthread mutex: ThreadSanitizer sees it, not Synchronization.Mutex).
        .target(name: "Locking"),
        // SQLite persistence.
        .target(name: "SceneStore", dependencies: ["SceneCore", "CSQLite", "SystemdKit"]),
        // scenectl's logic, as a library so that it can be unit-tested.
        .target(name: "SceneControl", dependencies: ["Varlink", "SystemdKit", "SceneCore", "SceneReplay", "SceneInterface", "Locking"]),
        // Service wiring.
        .target(name: "SceneDaemon", dependencies: ["SceneCore", "SceneStore", "SystemdKit", "Varlink", "SceneInterface", "Locking", "SceneTrace", "ProcessKit"]),

        // The app side of io.scened.App with UIKit's delegate protocols (Foundation and the
        // repo's Varlink client only).
        .target(name: "SceneClient", dependencies: ["Varlink", "SceneInterface", "Locking"]),
        // Example app: saves a counter and a note in its restoration data, restores them.
        .executableTarget(name: "scene-notes", dependencies: ["SceneClient", "Varlink"], path: "Examples/scene-notes"),

        .executableTarget(name: "scened", dependencies: ["SceneDaemon"]),
        .executableTarget(name: "scenectl", dependencies: ["SceneControl"]),

        // Benchmarks: release-built executables that print figures and conditions; never tests.
        .executableTarget(name: "scenecore-bench", dependencies: ["SceneCore"]),
        // SceneCore and SceneStore: the start-up figures fill a database as the daemon would
        // (StoreFill.swift), a million sessions in seconds instead of minutes of Connect calls.
        .executableTarget(name: "scened-bench", dependencies: ["Varlink", "Locking", "SystemdKit", "ProcessKit",
                                                               "SceneCore", "SceneStore"]),

        // The trace model the daemon writes and the replayer reads: the JSON-lines format (§3.7),
        // its settings line, and the daemon's history as a trace (pure; Varlink for its JSON).
        .target(name: "SceneTrace", dependencies: ["SceneCore", "Varlink"]),
        // Trace replay of the reclaim policy against baselines on a virtual clock (§3.7).
        .target(name: "SceneReplay", dependencies: ["SceneCore", "SceneTrace", "Varlink"]),
        .executableTarget(name: "scene-replay", dependencies: ["SceneReplay"]),
        // The Varlink project's certification (org.varlink.certification), server and client,
        // on the Varlink module alone: proves the wire layer against other implementations.
        .executableTarget(name: "varlink-certification", dependencies: ["Varlink"]),

        // Test support shared by the test targets (which cannot import each other): child
        // processes, the notify listener, temporary directories and files, timing, the built
        // binaries, starting scened (and the real daemon in a workspace), raw Varlink
        // connections, threads (the seeded generator is SceneCore's SplitMix64, the lock Locking's
        // Locked). Test-only: no product uses it.
        .target(name: "ScenedTestSupport", dependencies: ["Varlink", "Locking"], path: "Tests/ScenedTestSupport"),
        // The child side of SystemdKitTests' process-level tests (private namespaces, socket
        // activation): run by those tests, it reports one `ok`/`fail` line per check. Test-only.
        .executableTarget(name: "systemdkit-probe", dependencies: ["SystemdKit", "ScenedTestSupport"],
                          path: "Tests/SystemdKitProbe"),
        // The writer side of SceneStoreTests' kill -9 test: commits background work, acknowledging
        // each commit on stdout. Test-only.
        .executableTarget(name: "store-crash-writer", dependencies: ["SceneStore", "SceneCore"],
                          path: "Tests/StoreCrashWriter"),

        .testTarget(name: "SceneCoreTests", dependencies: ["SceneCore", "ScenedTestSupport"]),
        .testTarget(name: "VarlinkTests", dependencies: ["Varlink", "ScenedTestSupport"]),
        .testTarget(name: "SystemdKitTests", dependencies: ["SystemdKit", "ScenedTestSupport"]),
        .testTarget(name: "SceneControlTests", dependencies: ["SceneControl", "Varlink", "SceneCore", "SceneInterface", "Locking", "ScenedTestSupport"]),
        .testTarget(name: "SceneStoreTests", dependencies: ["SceneStore", "SceneCore", "ScenedTestSupport"]),
        // Fixtures are read by path (#filePath), not bundled: excluded from the sources.
        .testTarget(name: "ReclaimTests", dependencies: ["SceneCore", "SceneTrace", "SceneReplay"], exclude: ["Fixtures"]),
        .testTarget(name: "DaemonIntegrationTests", dependencies: ["Varlink", "SceneCore", "ScenedTestSupport"]),
        // Careless and hostile clients against the real daemon: early closes, floods, slow
        // readers, partial messages, connection and fd exhaustion, oversized data, garbage.
        .testTarget(name: "HostileClientTests", dependencies: ["Varlink", "SceneCore", "ScenedTestSupport"]),
        .testTarget(name: "DurabilityTests", dependencies: ["Varlink", "SceneCore", "ScenedTestSupport"]),
        .testTarget(name: "SystemTests", dependencies: []),
        // Authorization with real users (created and removed by the tests; needs root).
        .testTarget(name: "AccessControlTests", dependencies: ["Varlink", "ScenedTestSupport"]),
        // SceneClient against the real daemon: callbacks equal the Monitor's, restoration
        // after a disconnect, reattach after a daemon restart.
        .testTarget(name: "SceneClientTests", dependencies: ["SceneClient", "Varlink", "Locking", "ScenedTestSupport"]),
        // ProcessKit with real processes and cgroups (the cgroup tests need root and cgroup v2).
        .testTarget(name: "ProcessKitTests", dependencies: ["ProcessKit", "ScenedTestSupport"]),
        // The Cockpit page (cockpit/scened) in headless Chromium against cockpit-ws and scened;
        // the browser script is Tests/Cockpit/cockpit_page_test.py (needs root: a test user).
        .testTarget(name: "CockpitTests", dependencies: ["Varlink", "ScenedTestSupport"]),
        .testTarget(name: "SceneDaemonTests", dependencies: ["SceneDaemon", "SceneCore", "SceneStore", "SystemdKit", "SceneTrace",
                                                           "SceneReplay", "Locking", "ScenedTestSupport"]),
    ]
)
