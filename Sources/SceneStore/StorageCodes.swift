import SceneCore

/// The integer each enumeration case is stored as. These are part of the schema, written down
/// here rather than borrowed from SceneCore's raw values, so that reordering or inserting a case
/// there cannot silently change what old rows mean: a new case fails to compile here until it is
/// given a new code. Codes are never reused or renumbered.
enum StorageCodes {
    static func code(_ s: SceneActivationState) -> Int64 {
        switch s {
        case .unattached: 0
        case .foregroundInactive: 1
        case .foregroundActive: 2
        case .background: 3
        }
    }

    static func sceneState(_ c: Int64) -> SceneActivationState? {
        switch c {
        case 0: .unattached
        case 1: .foregroundInactive
        case 2: .foregroundActive
        case 3: .background
        default: nil
        }
    }

    static func code(_ p: ProcessState) -> Int64 {
        switch p {
        case .notRunning: 0
        case .running: 1
        case .suspended: 2
        }
    }

    static func processState(_ c: Int64) -> ProcessState? {
        switch c {
        case 0: .notRunning
        case 1: .running
        case 2: .suspended
        default: nil
        }
    }

    /// `discarded` has a code only so that the schema's CHECK (condition IN (0, 1)) can refuse it.
    static func code(_ c: SessionCondition) -> Int64 {
        switch c {
        case .live: 0
        case .archived: 1
        case .discarded: 2
        }
    }

    /// Only the conditions a stored session can have.
    static func storedCondition(_ c: Int64) -> SessionCondition? {
        switch c {
        case 0: .live
        case 1: .archived
        default: nil
        }
    }

    static func code(_ r: SessionRole) -> Int64 {
        switch r {
        case .windowApplication: 0
        case .windowExternalDisplayNonInteractive: 1
        case .carTemplateApplication: 2
        case .volumetricApplication: 3
        case .immersiveSpaceApplication: 4
        }
    }

    static func role(_ c: Int64) -> SessionRole? {
        switch c {
        case 0: .windowApplication
        case 1: .windowExternalDisplayNonInteractive
        case 2: .carTemplateApplication
        case 3: .volumetricApplication
        case 4: .immersiveSpaceApplication
        default: nil
        }
    }

    static func code(_ a: ApplicationState) -> Int64 {
        switch a {
        case .active: 0
        case .inactive: 1
        case .background: 2
        }
    }

    static func applicationState(_ c: Int64) -> ApplicationState? {
        switch c {
        case 0: .active
        case 1: .inactive
        case 2: .background
        default: nil
        }
    }

    static func code(_ r: TerminationReason) -> UInt8 {
        switch r {
        case .requested: 0
        case .backgroundTaskExpired: 1
        case .memoryPressure: 2
        case .exited: 3
        case .hung: 4
        case .shutdown: 5
        }
    }

    static func terminationReason(_ c: UInt8) -> TerminationReason? {
        switch c {
        case 0: .requested
        case 1: .backgroundTaskExpired
        case 2: .memoryPressure
        case 3: .exited
        case 4: .hung
        case 5: .shutdown
        default: nil
        }
    }

    static func code(_ e: EventName) -> Int64 {
        switch e {
        case .didFinishLaunching: 0
        case .configurationForConnecting: 1
        case .didDiscardSceneSessions: 2
        case .didReceiveMemoryWarning: 3
        case .willTerminate: 4
        case .backgroundTaskWillExpire: 5
        case .willConnectTo: 6
        case .willEnterForeground: 7
        case .didBecomeActive: 8
        case .willResignActive: 9
        case .didEnterBackground: 10
        case .didDisconnect: 11
        case .suspended: 12
        case .resumed: 13
        case .terminated: 14
        case .performBackgroundTask: 15
        case .didReceiveNotification: 16
        case .openURLContexts: 17
        case .continueUserActivity: 18
        }
    }

    static func eventName(_ c: Int64) -> EventName? {
        switch c {
        case 0: .didFinishLaunching
        case 1: .configurationForConnecting
        case 2: .didDiscardSceneSessions
        case 3: .didReceiveMemoryWarning
        case 4: .willTerminate
        case 5: .backgroundTaskWillExpire
        case 6: .willConnectTo
        case 7: .willEnterForeground
        case 8: .didBecomeActive
        case 9: .willResignActive
        case 10: .didEnterBackground
        case 11: .didDisconnect
        case 12: .suspended
        case 13: .resumed
        case 14: .terminated
        case 15: .performBackgroundTask
        case 16: .didReceiveNotification
        case 17: .openURLContexts
        case 18: .continueUserActivity
        default: nil
        }
    }

    /// An event's resulting state: scene states as their codes, process states as 16 + theirs.
    static func code(_ state: EventState) -> Int64 {
        switch state {
        case .scene(let s): code(s)
        case .process(let p): 16 + code(p)
        }
    }

    static func eventState(_ c: Int64) -> EventState? {
        if c < 16 { return sceneState(c).map { .scene($0) } }
        return processState(c - 16).map { .process($0) }
    }

    static func code(_ k: WakeKind) -> Int64 {
        switch k {
        case .refresh: 0
        case .processing: 1
        case .notification: 2
        }
    }

    static func wakeKind(_ c: Int64) -> WakeKind? {
        switch c {
        case 0: .refresh
        case 1: .processing
        case 2: .notification
        default: nil
        }
    }

    static func code(_ p: NotificationPriority) -> Int64 {
        switch p {
        case .normal: 0
        case .high: 1
        }
    }

    static func notificationPriority(_ c: Int64) -> NotificationPriority? {
        switch c {
        case 0: .normal
        case 1: .high
        default: nil
        }
    }

    /// Background modes as a bit set, one stored bit per mode, named here rather than taken
    /// from the option set's raw value.
    static let modeBits: [(BackgroundModes, Int64)] = [(.audio, 1), (.location, 2), (.voip, 4), (.processing, 8)]

    static func code(_ modes: BackgroundModes) -> Int64 {
        modeBits.reduce(0) { modes.contains($1.0) ? $0 | $1.1 : $0 }
    }

    /// nil when a bit is set that no mode has.
    static func backgroundModes(_ c: Int64) -> BackgroundModes? {
        var modes: BackgroundModes = []
        var rest = c
        for (mode, bit) in modeBits where c & bit != 0 {
            modes.insert(mode)
            rest &= ~bit
        }
        return rest == 0 ? modes : nil
    }
}
