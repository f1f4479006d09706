import Testing
@testable import SceneCore

/// Issue 16 item 1, the core's part: large payloads can be left to the store once committed
/// (`releaseSavedData`), and put back (`holdSavedData`); neither is a change. A reconnection
/// whose restoration data is not held is refused, never handed on empty.
@Suite struct SavedDataTests {
    static let info = UserInfo(json: #"{"document":""# + String(repeating: "d", count: 100) + #""}"#)
    static let restoration = RestorationData.json(#"{"scroll":""# + String(repeating: "s", count: 16_000) + #""}"#)

    /// s1: archived, with large userInfo and restoration data, both held.
    func archived() -> (Harness, SessionID) {
        var h = Harness()
        let s = h.connect(mail, userInfo: Self.info)
        h.steps(.saveState(s, Self.restoration))
        h.steps(.background(s))
        h.steps(.disconnect(s))
        return (h, s)
    }

    @Test func releaseLeavesSizesAndEmitsNothing() {
        var (h, s) = archived()
        let version = h.engine.sessions[s]!.savedDataVersion
        #expect(version.hasLargePayload)
        let next = h.engine.nextSequence
        h.engine.releaseSavedData(s, committed: version)
        let released = h.engine.sessions[s]!
        #expect(released.savedUserInfo == .stored(byteCount: Self.info.json.utf8.count))
        #expect(released.savedRestoration == .stored(byteCount: Self.restoration.byteCount))
        #expect(!released.savedDataVersion.hasLargePayload)
        #expect(h.engine.nextSequence == next)
        // Released twice: nothing more to leave.
        h.engine.releaseSavedData(s, committed: released.savedDataVersion)
        #expect(h.engine.sessions[s]!.details === released.details)
    }

    @Test func aStaleVersionReleasesNothing() {
        var (h, s) = archived()
        let committed = h.engine.sessions[s]!.savedDataVersion
        let newer = UserInfo(json: #"{"newer":""# + String(repeating: "n", count: 100) + #""}"#)
        h.steps(.saveUserInfo(s, newer))
        h.engine.releaseSavedData(s, committed: committed)
        #expect(h.engine.sessions[s]!.savedUserInfo == .held(newer), "a change not yet committed was dropped")
    }

    @Test func smallPayloadsStayHeld() {
        var h = Harness()
        let s = h.connect(mail, userInfo: UserInfo(json: #"{"k":1}"#))
        h.steps(.saveState(s, .json(#"{"r":2}"#)))
        let version = h.engine.sessions[s]!.savedDataVersion
        #expect(!version.hasLargePayload)
        h.engine.releaseSavedData(s, committed: version)
        #expect(!h.engine.sessions[s]!.hasStoredPayload)
    }

    @Test func aReconnectionWithoutItsRestorationDataIsRefused() throws {
        var (h, s) = archived()
        h.engine.releaseSavedData(s, committed: h.engine.sessions[s]!.savedDataVersion)
        let before = h.engine.snapshot
        #expect(throws: LifecycleError.savedDataUnavailable(s, reason: "its state-restoration data was not read from the store")) {
            try h.run(.activate(s))
        }
        #expect(h.engine.snapshot == before, "a refused reconnection changed the engine")

        // Read back, the same command hands the data to willConnectTo.
        h.engine.holdSavedData(s, userInfo: Self.info, restoration: Self.restoration)
        #expect(!h.engine.sessions[s]!.hasStoredPayload)
        let events = try h.run(.activate(s))
        let connect = try #require(events.first { $0.name == .willConnectTo })
        #expect(connect.detail == .connect(restoration: Self.restoration, reconnect: true))
    }

    @Test func changingOnePayloadKeepsTheOtherInTheStore() {
        var (h, s) = archived()
        h.engine.releaseSavedData(s, committed: h.engine.sessions[s]!.savedDataVersion)
        h.steps(.saveUserInfo(s, UserInfo(json: #"{"k":2}"#)))
        let after = h.engine.sessions[s]!
        #expect(after.savedUserInfo == .held(UserInfo(json: #"{"k":2}"#)))
        #expect(after.savedRestoration == .stored(byteCount: Self.restoration.byteCount))
        // Holding fills only what is stored: the newer userInfo is kept.
        h.engine.holdSavedData(s, userInfo: Self.info, restoration: Self.restoration)
        #expect(h.engine.sessions[s]!.savedUserInfo == .held(UserInfo(json: #"{"k":2}"#)))
        #expect(h.engine.sessions[s]!.savedRestoration == .held(Self.restoration))
    }
}
