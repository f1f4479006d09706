import SceneCore
import Testing
import Varlink
@testable import SceneDaemon

/// The pure pieces of a streamed ListSessions: the cursor that puts the ids in order as the
/// listing is read, and the encoder of a listed session.
@Suite struct ListingPiecesTests {
    private func drain(_ cursor: SessionIDCursor) -> [UInt64] {
        var cursor = cursor
        var out: [UInt64] = []
        while let id = cursor.current {
            out.append(id.rawValue)
            cursor.advance()
        }
        // Taking past the end stays at the end.
        cursor.advance()
        #expect(cursor.current == nil)
        return out
    }

    @Test func emptyHasNothing() {
        let cursor = SessionIDCursor([])
        #expect(cursor.current == nil && cursor.count == 0)
        #expect(drain(cursor).isEmpty)
    }

    @Test func denseIdsComeOutSorted() {
        // Dense (a bitmap): shuffled, with gaps, across word boundaries and at both ends.
        var rng = SystemRandomNumberGenerator()
        var ids = Array(UInt64(1)...UInt64(5000)).filter { $0 % 7 != 3 }
        ids.append(5063)
        ids.append(5064)
        ids.shuffle(using: &rng)
        let cursor = SessionIDCursor(ids.map(SessionID.init))
        #expect(cursor.count == ids.count)
        #expect(drain(cursor) == ids.sorted())
    }

    @Test func sparseIdsComeOutSorted() {
        // Far apart (a sorted array): a bitmap over them would be larger than the ids.
        var ids: [UInt64] = [UInt64.max - 1, 3, 1 << 40, 77, 1 << 20, 64, 63]
        ids.shuffle()
        #expect(drain(SessionIDCursor(ids.map(SessionID.init))) == ids.sorted())
    }

    @Test func singleAndWordEdges() {
        let sets: [[UInt64]] = [[9], [0, 63, 64, 127, 128], [64, 65], [1, 1 + 63, 1 + 64 * 3]]
        for set in sets {
            #expect(drain(SessionIDCursor(set.reversed().map(SessionID.init))) == set)
        }
    }

    private func session(_ n: UInt64, configuration: String = "Default Configuration", app: String = "com.example.app",
                         restoration: RestorationData? = nil, userInfo: String = "{}", createdAt: Int64 = 1_700_000_000_000_000,
                         backgroundSince: Int64 = 0, protected: Bool = false) -> SceneSession {
        SceneSession(id: SessionID(n), app: AppID(app)!, role: .windowApplication, configurationName: configuration,
                     userInfo: UserInfo(json: userInfo), restoration: restoration, footprint: n &* 4096,
                     condition: .live, sceneState: .background, sceneInstance: UInt32(truncatingIfNeeded: n),
                     createdAt: Timestamp(microseconds: createdAt), lastActiveAt: Timestamp(microseconds: createdAt + 9),
                     backgroundSince: Timestamp(microseconds: backgroundSince), activations: 12, restores: 0,
                     restoreCostMs: 250, isProtected: protected)
    }

    private func general(_ s: SceneSession) -> String {
        var w = JSONWriter()
        w.beginArray()
        w.session(s, payloads: nil)
        w.session(s, payloads: nil)
        w.endArray()
        return String(decoding: w.bytes, as: UTF8.self)
    }

    private func listed(_ s: SceneSession) -> String {
        var w = JSONWriter()
        w.beginArray()
        w.listedSession(s)
        w.listedSession(s)
        w.endArray()
        return String(decoding: w.bytes, as: UTF8.self)
    }

    @Test func listedSessionIsTheGeneralEncodingWithoutPrivateData() {
        let cases = [
            session(1),
            session(0, configuration: ""),
            session(UInt64.max, app: "org.example.a-much-longer_app.identifier.with.many.labels"),
            session(42, configuration: "quote \" backslash \\ tab \t nul \u{0} end", restoration: .json(#"{"a":1}"#)),
            session(7, configuration: "ünïcødé 名前 🎬", restoration: .bytes([1, 2, 3, 4, 5]), userInfo: #"{"k":"v"}"#,
                    createdAt: -5, backgroundSince: Int64.min, protected: true),
            session(1234567890, configuration: String(repeating: "long name ", count: 300), createdAt: Int64.max - 9),
        ]
        for s in cases {
            #expect(listed(s) == general(s))
        }
        // And it parses, with no private data in it.
        let parsed = try? JSONParser.parse(Array(listed(cases[3]).utf8))
        #expect(parsed?.arrayValue?.first?["userInfo"] == nil)
        #expect(parsed?.arrayValue?.first?["restorationSize"]?.intValue == 7)
    }
}
