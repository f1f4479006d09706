// swift-tools-version:6.0
// Swift 6 language mode throughout (tools version 6.0 defaults to it).
import PackageDescription

let package = Package(
    name: "scened",
    products: [
        .executable(name: "scened", targets: ["scened"]),
        .executable(name: "scenectl", targets: ["scenectl"]),
        .library(name: "SceneCore", targets: ["SceneCore"]),
    ],
    targets: [
        // C libraries from Debian, reached through system-library modules.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // Pure core: no I/O, no clocks, no globals.
        .target(name: "SceneCore"),
        // Wire protocol: JSON, framing, connection state machine, IDL, sockets, client.
        .target(name: "Varlink"),
        // Thin face over libsystemd.
        .target(name: "SystemdKit", dependencies: ["CSystemd"]),
        // SQLite persistence.
        .target(name: "SceneStore", dependencies: ["SceneCore", "CSQLite"]),
        // Service wiring.
        .target(name: "SceneDaemon", dependencies: ["SceneCore", "SceneStore", "SystemdKit", "Varlink"]),

        .executableTarget(name: "scened", dependencies: ["SceneDaemon"]),
        .executableTarget(name: "scenectl", dependencies: ["Varlink", "SystemdKit", "SceneCore"]),

        .testTarget(name: "SceneCoreTests", dependencies: ["SceneCore"]),
        .testTarget(name: "VarlinkTests", dependencies: ["Varlink"]),
        .testTarget(name: "SystemdKitTests", dependencies: ["SystemdKit"]),
    ]
)
