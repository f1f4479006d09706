import Varlink

/// Replies shaped like scened's (see io.scened.Manager), at times around `testNow`.
enum Fixtures {
    static let now = Int64(testNow)

    static func session(_ id: String, app: String = "com.example.mail", condition: String = "live",
                        state: String = "foregroundActive", footprint: Int64 = 52_428_800,
                        lastActive: Int64 = now - 300_000_000) -> JSONObject {
        [
            "id": .string(id), "app": .string(app), "role": "windowApplication", "configuration": "Default Configuration",
            "condition": .string(condition), "state": .string(state), "userInfo": ["draft": 12],
            "footprint": .int(footprint), "protected": false, "restoreCostMs": 0, "sceneInstance": 2,
            "createdAt": .int(now - 3_600_000_000), "lastActiveAt": .int(lastActive), "backgroundSince": 0,
            "activations": 3, "restores": 1,
        ]
    }

    static let status: JSONObject = ["status": [
        "version": "0.1.0", "pid": 1234, "uptime": 3_720_000_000, "socket": "/run/scened/io.scened.Manager",
        "apps": 3, "runningApps": 2, "suspendedApps": 1, "sessions": ["live": 7, "archived": 3, "total": 10],
        "foregroundActiveScenes": 2, "backgroundTasks": 1, "nextSeq": 1042, "connections": 1,
    ]]

    static let apps: JSONObject = ["apps": [
        [
            "id": "com.example.mail", "process": "running", "state": "active", "sessions": 3, "liveSessions": 2,
            "foregroundActiveScenes": 1, "foregroundInactiveScenes": 0, "backgroundScenes": 1,
            "pendingDiscards": [], "tasks": [
                ["token": "t3", "app": "com.example.mail", "session": "s2", "name": "upload",
                 "beganAt": .int(now - 10_000_000), "expiresAt": .int(now + 25_000_000)],
            ],
            "launches": 1, "launchedAt": .int(now - 7_200_000_000), "attachedPid": 4242, "baseFootprint": 20_971_520,
            "sceneFootprint": 104_857_600,
        ],
        [
            "id": "org.example.notes", "process": "notRunning", "state": "background", "sessions": 1, "liveSessions": 0,
            "foregroundActiveScenes": 0, "foregroundInactiveScenes": 0, "backgroundScenes": 0,
            "pendingDiscards": ["s9"], "tasks": [], "launches": 0, "baseFootprint": 0, "sceneFootprint": 0,
        ],
    ]]
}
