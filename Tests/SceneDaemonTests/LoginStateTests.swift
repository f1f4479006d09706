import SceneCore
import Testing
@testable import SceneDaemon

/// A full read of a session, as GetAll gives it.
private func read(uid: UInt32, seat: String = "seat0", sessionClass: String = "user", active: Bool = true,
                  locked: Bool = false, idle: Bool = false) -> LoginSessionChange {
    LoginSessionChange(uid: uid, seat: seat, sessionClass: sessionClass, active: active, lockedHint: locked,
                       idleHint: idle, remote: false)
}

@Suite("LoginState: rule R30")
struct LoginStateTests {
    @Test("a user's own sessions: held only when all are locked, inactive or (followed) idle")
    func ownSessions() {
        var s = LoginState()
        s.apply(read(uid: 1000), to: "1")
        s.apply(read(uid: 1000, seat: "", active: true), to: "2")
        #expect(s.verdict(forUID: 1000) == .free)
        s.lockSignal(true, for: "1")
        #expect(s.verdict(forUID: 1000) == .free, "one of two sessions is still usable")
        s.apply(LoginSessionChange(active: false), to: "2")
        #expect(s.verdict(forUID: 1000) == .held(.lock), "locked wins over inactive")
        s.lockSignal(false, for: "1")
        #expect(s.verdict(forUID: 1000) == .free)
        s.apply(LoginSessionChange(active: false), to: "1")
        #expect(s.verdict(forUID: 1000) == .held(.session))
    }

    @Test("idle holds only when followed, and is the weakest cause")
    func idle() {
        var s = LoginState()
        s.apply(read(uid: 5, idle: true), to: "a")
        #expect(s.verdict(forUID: 5) == .free)
        s.followIdle = true
        #expect(s.verdict(forUID: 5) == .held(.idle))
        s.apply(read(uid: 5, seat: "", active: false), to: "b")
        #expect(s.verdict(forUID: 5) == .held(.session))
        s.apply(LoginSessionChange(lockedHint: true), to: "b")
        #expect(s.verdict(forUID: 5) == .held(.lock))
    }

    @Test("only sessions of class user count; a user without one follows seat0")
    func seat0() {
        var s = LoginState()
        #expect(s.verdict(forUID: 0) == .free, "no session at all: headless, free")
        s.apply(read(uid: 0, seat: "", sessionClass: "background", active: false), to: "bg")
        #expect(s.verdict(forUID: 0) == .free, "a background session is not counted; seat0 is empty")
        s.apply(read(uid: 1000, active: true), to: "desk")
        #expect(s.verdict(forUID: 0) == .free)
        s.lockSignal(true, for: "desk")
        #expect(s.verdict(forUID: 0) == .held(.lock))
        #expect(s.verdict(forUID: 1000) == .held(.lock))
        s.lockSignal(false, for: "desk")
        s.apply(LoginSessionChange(active: false), to: "desk")
        #expect(s.verdict(forUID: 0) == .held(.session), "seat0 has sessions but none active")
        s.apply(read(uid: 1001, active: true, idle: true), to: "other")
        #expect(s.verdict(forUID: 0) == .free, "idle not followed")
        s.followIdle = true
        #expect(s.verdict(forUID: 0) == .held(.idle))
        s.remove("desk")
        s.remove("other")
        #expect(s.verdict(forUID: 0) == .free, "never \"zero sessions, so locked\"")
    }

    @Test("a LockedHint cleared by the locker ends a Lock signal that will see no Unlock")
    func lockedHintClearsSignal() {
        var s = LoginState()
        s.apply(read(uid: 7), to: "s")
        s.lockSignal(true, for: "s")
        s.apply(LoginSessionChange(lockedHint: false), to: "s")
        #expect(s.verdict(forUID: 7) == .held(.lock), "a hint that stays false is no unlock")
        s.apply(LoginSessionChange(lockedHint: true), to: "s")
        s.apply(LoginSessionChange(lockedHint: false), to: "s")
        #expect(s.verdict(forUID: 7) == .free)
    }

    @Test("changes for an unknown session are dropped; retain keeps the listed ones")
    func unknownAndRetain() {
        var s = LoginState()
        s.apply(LoginSessionChange(lockedHint: true), to: "ghost")
        #expect(s.sessions.isEmpty)
        s.lockSignal(true, for: "ghost")
        #expect(s.sessions.isEmpty)
        s.apply(read(uid: 1), to: "a")
        s.apply(read(uid: 2), to: "b")
        s.retain(only: ["b"])
        #expect(Array(s.sessions.keys) == ["b"])
    }

    @Test("random runs agree with a plain model of R30", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomRuns(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var state = LoginState()
        var model = ModelState()
        let uids: [UInt32] = [0, 1000, 1001, 1002]
        for step in 0..<2_000 {
            let id = "s\(rng.next() % 6)"
            switch rng.next() % 9 {
            case 0, 1:
                let change = read(uid: uids[Int(rng.next() % 4)], seat: ["seat0", "", "seat1"][Int(rng.next() % 3)],
                                  sessionClass: ["user", "user", "greeter", "background"][Int(rng.next() % 4)],
                                  active: rng.next() % 2 == 0, locked: rng.next() % 4 == 0, idle: rng.next() % 3 == 0)
                state.apply(change, to: id)
                model.apply(change, id)
            case 2:
                state.remove(id)
                model.sessions[id] = nil
            case 3, 4:
                let locked = rng.next() % 2 == 0
                state.lockSignal(locked, for: id)
                model.sessions[id]?.signalled = locked
            case 5:
                let change = LoginSessionChange(lockedHint: rng.next() % 2 == 0)
                state.apply(change, to: id)
                model.apply(change, id)
            case 6:
                let change = LoginSessionChange(active: rng.next() % 2 == 0)
                state.apply(change, to: id)
                model.apply(change, id)
            case 7:
                let change = LoginSessionChange(idleHint: rng.next() % 2 == 0)
                state.apply(change, to: id)
                model.apply(change, id)
            default:
                state.followIdle.toggle()
                model.followIdle = state.followIdle
            }
            for uid in uids {
                let got = state.verdict(forUID: uid)
                let want = model.verdict(uid)
                #expect(got == want, "seed \(seed) step \(step) uid \(uid)")
                if got != want { return }
            }
        }
    }
}

/// R30 written the plain way, to check `LoginState` against.
private struct ModelState {
    struct Session {
        var uid: UInt32, seat: String, cls: String, active: Bool, hint: Bool, signalled: Bool, idle: Bool
    }
    var sessions: [String: Session] = [:]
    var followIdle = false

    mutating func apply(_ c: LoginSessionChange, _ id: String) {
        if sessions[id] == nil {
            guard let uid = c.uid else { return }
            sessions[id] = Session(uid: uid, seat: "", cls: "user", active: true, hint: false, signalled: false, idle: false)
        }
        var s = sessions[id]!
        s.uid = c.uid ?? s.uid
        s.seat = c.seat ?? s.seat
        s.cls = c.sessionClass ?? s.cls
        s.active = c.active ?? s.active
        if let hint = c.lockedHint {
            if s.hint == true && hint == false { s.signalled = false }
            s.hint = hint
        }
        s.idle = c.idleHint ?? s.idle
        sessions[id] = s
    }

    func verdict(_ uid: UInt32) -> LoginVerdict {
        let mine = sessions.values.filter { $0.uid == uid && $0.cls == "user" }
        func locked(_ s: Session) -> Bool { s.hint || s.signalled }
        if !mine.isEmpty {
            let allHeld = mine.allSatisfy { locked($0) || !$0.active || (followIdle && $0.idle) }
            if !allHeld { return .free }
            if mine.contains(where: locked) { return .held(.lock) }
            if mine.contains(where: { !$0.active }) { return .held(.session) }
            return .held(.idle)
        }
        let seat = sessions.values.filter { $0.seat == "seat0" }
        if seat.isEmpty { return .free }
        let active = seat.filter { $0.active }
        if active.isEmpty { return .held(.session) }
        if active.contains(where: { !locked($0) && !(followIdle && $0.idle) }) { return .free }
        return .held(active.contains(where: locked) ? .lock : .idle)
    }
}
