import Testing
import SceneCore
@testable import SceneStore

/// Stored codes are the schema's, not SceneCore's raw values: each case has its own code, and
/// every code reads back as its case.
@Suite struct StorageCodesTests {
    func expectBijective<T: Hashable>(_ cases: [T], _ encode: (T) -> Int64, _ decode: (Int64) -> T?,
                                      sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(Set(cases.map(encode)).count == cases.count, sourceLocation: sourceLocation)
        for c in cases { #expect(decode(encode(c)) == c, "\(c)", sourceLocation: sourceLocation) }
        #expect(decode(-1) == nil && decode(1_000) == nil, sourceLocation: sourceLocation)
    }

    @Test func everyCaseHasItsOwnCode() {
        expectBijective(SceneActivationState.allCases, StorageCodes.code, StorageCodes.sceneState)
        expectBijective(ProcessState.allCases, StorageCodes.code, StorageCodes.processState)
        expectBijective([SessionCondition.live, .archived], StorageCodes.code, StorageCodes.storedCondition)
        #expect(StorageCodes.storedCondition(StorageCodes.code(SessionCondition.discarded)) == nil)
        expectBijective(SessionRole.allCases, StorageCodes.code, StorageCodes.role)
        expectBijective(ApplicationState.allCases, StorageCodes.code, StorageCodes.applicationState)
        expectBijective(EventName.allCases, StorageCodes.code, StorageCodes.eventName)
        expectBijective(TerminationReason.allCases, { Int64(StorageCodes.code($0)) },
                        { UInt8(exactly: $0).flatMap(StorageCodes.terminationReason) })
        let states = SceneActivationState.allCases.map { EventState.scene($0) } + ProcessState.allCases.map { .process($0) }
        for state in states { #expect(StorageCodes.eventState(StorageCodes.code(state)) == state) }
        #expect(Set(states.map(StorageCodes.code)).count == states.count)
    }

    /// The codes version 1 files were written with (the migration fixture relies on them too).
    @Test func codesAreTheReleasedOnes() {
        let scenes: [SceneActivationState] = [.unattached, .foregroundInactive, .foregroundActive, .background]
        #expect(scenes.map { StorageCodes.code($0) } == [0, 1, 2, 3])
        let processes: [ProcessState] = [.notRunning, .running, .suspended]
        #expect(processes.map { StorageCodes.code($0) } == [0, 1, 2])
        let roles: [SessionRole] = [.windowApplication, .carTemplateApplication, .immersiveSpaceApplication]
        #expect(roles.map { StorageCodes.code($0) } == [0, 2, 4])
        let appStates: [ApplicationState] = [.active, .inactive, .background]
        #expect(appStates.map { StorageCodes.code($0) } == [0, 1, 2])
        let names: [EventName] = [.didFinishLaunching, .didDiscardSceneSessions, .willConnectTo, .didEnterBackground,
                                  .terminated]
        #expect(names.map { StorageCodes.code($0) } == [0, 2, 6, 10, 14])
        #expect(StorageCodes.code(EventState.process(.notRunning)) == 16)
        #expect(StorageCodes.code(TerminationReason.memoryPressure) == 2)
    }
}
