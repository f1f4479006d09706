import Testing
@testable import SceneCore

/// Every typed error, each leaving `engine.snapshot` exactly as it was and producing no effect;
/// and the commands whose target is the current state, which succeed and emit nothing.
@Suite struct ErrorTests {
    let s1 = SessionID(1), s2 = SessionID(2), s3 = SessionID(3)
    let unknownApp = AppID("org.example.nobody")!
    let unknownSession = SessionID(99)

    /// mail: s1 foregroundActive, s2 foregroundInactive, s3 background, s4 archived; s5 discarded.
    /// maps: suspended, s6 background. notes: not running, s7 archived, s8 discarded while not
    /// running (pending).
    func world() -> Harness {
        var h = Harness()
        _ = h.connect(mail)
        _ = h.connect(mail)
        h.steps(.deactivate(s2))
        _ = h.connect(mail, background: true)
        _ = h.connect(mail, background: true)
        h.steps(.disconnect(SessionID(4)))
        _ = h.connect(mail, background: true)
        h.steps(.discard(SessionID(5)))
        _ = h.connect(maps, background: true)
        _ = h.connect(notes)
        _ = h.connect(notes)
        h.steps(.terminate(notes))
        h.steps(.discard(SessionID(8)))
        h.tick(at: at(5))
        #expect(h.process(maps) == .suspended && h.process(notes) == .notRunning && h.process(mail) == .running)
        return h
    }

    static func sessionCommands(_ id: SessionID) -> [Command] {
        [.activate(id), .deactivate(id), .background(id), .disconnect(id), .discard(id),
         .saveState(id, .json("1")), .saveUserInfo(id, UserInfo(json: "{}")), .setFootprint(id, 1),
         .setProtected(id, true), .beginTask(BeginTaskRequest(session: id))]
    }

    @Test func unknownAppIsRefused() {
        var h = world()
        for command: Command in [.terminate(unknownApp), .memoryWarning(apps: [mail, unknownApp]),
                                 .setAppFootprint(unknownApp, 1), .suspend(unknownApp, cause: .request),
                                 .beginTask(BeginTaskRequest(app: unknownApp))] {
            h.refuse(command, .noSuchApp(unknownApp))
        }
    }

    @Test func unknownSessionIsRefused() {
        var h = world()
        for id in [unknownSession, SessionID(0), SessionID(h.engine.nextSessionNumber)] {
            for command in Self.sessionCommands(id) { h.refuse(command, .noSuchSession(id)) }
        }
    }

    @Test func discardedSession() {
        var h = world()
        for id in [SessionID(5), SessionID(8)] {
            #expect(h.engine.wasDiscarded(id))
            for command in Self.sessionCommands(id) { h.refuse(command, .sessionDiscarded(id)) }
            h.refuse(.discard(id, cause: .cap("max")), .sessionDiscarded(id))
        }
    }

    @Test func secondDiscard() {
        var h = world()
        h.steps(.discard(s1))
        h.refuse(.discard(s1), .sessionDiscarded(s1))
    }

    @Test func unknownOrEndedTask() {
        var h = world()
        h.refuse(.endTask(TaskToken(42)), .noSuchTask(TaskToken(42)))
        let t = h.beginTask(app: mail)
        h.steps(.endTask(t))
        h.refuse(.endTask(t), .noSuchTask(t))
        // A task dies with its process.
        let u = h.beginTask(session: s1)
        h.steps(.terminate(mail))
        h.refuse(.endTask(u), .noSuchTask(u))
    }

    @Test func invalidArguments() {
        var h = world()
        h.refuse(.connect(ConnectRequest(app: mail, configurationName: "")),
                 .invalidArgument(name: "configuration", reason: "must be 1 to 255 bytes"))
        h.refuse(.connect(ConnectRequest(app: unknownApp, configurationName: String(repeating: "c", count: 256))),
                 .invalidArgument(name: "configuration", reason: "must be 1 to 255 bytes"))
        h.refuse(.beginTask(BeginTaskRequest(app: mail, name: String(repeating: "n", count: 256))),
                 .invalidArgument(name: "name", reason: "longer than 255 bytes"))
        h.refuse(.beginTask(BeginTaskRequest()), .invalidArgument(name: "session", reason: "a task needs a session or an app"))
        h.refuse(.beginTask(BeginTaskRequest(app: maps, session: s1)),
                 .invalidArgument(name: "app", reason: "session s1 belongs to com.example.mail, not com.example.maps"))
        let tooBig = "must be at most 1T (1099511627776 bytes)"
        h.refuse(.connect(ConnectRequest(app: unknownApp, footprint: SceneSession.maxFootprint + 1)),
                 .invalidArgument(name: "footprint", reason: tooBig))
        h.refuse(.setFootprint(s1, .max), .invalidArgument(name: "footprint", reason: tooBig))
        h.refuse(.setAppFootprint(mail, SceneSession.maxFootprint + 1), .invalidArgument(name: "footprint", reason: tooBig))
        // The limits themselves are accepted; an unknown app is not created by a refused connect.
        #expect(h.engine.apps[unknownApp] == nil)
        h.steps(.setFootprint(s1, SceneSession.maxFootprint))
        h.steps(.setAppFootprint(mail, SceneSession.maxFootprint))
        #expect(h.steps(.connect(ConnectRequest(app: mail, configurationName: String(repeating: "c", count: 255)))).count == 4)
        _ = h.beginTask(app: mail, name: String(repeating: "n", count: 255))
    }

    @Test("identifiers parse in their one canonical form: no sign, no leading zero, no overflow")
    func identifierParsing() {
        #expect(SessionID(parsing: "s42") == SessionID(42))
        #expect(SessionID(parsing: "42") == SessionID(42))
        #expect(TaskToken(parsing: "t7") == TaskToken(7))
        #expect(SessionID(parsing: "s18446744073709551615") == SessionID(.max))
        for text in ["s01", "007", "s0", "0", "s", "", "s-1", "s+1", "S1", "s1 ", "s18446744073709551616", "s4x"] {
            #expect(SessionID(parsing: text) == nil, "\(text)")
        }
        #expect(TaskToken(parsing: "t01") == nil)
    }

    @Test func invalidTransitions() {
        var h = world()
        let reclaim = EventCause.reclaim(note)
        let refused: [Command] = [
            .launch(mail), .launch(maps),                              // already running / suspended
            .terminate(notes),                                         // not running
            .terminate(mail, cause: reclaim),                          // a foreground scene
            .deactivate(s3), .deactivate(SessionID(4)), .deactivate(SessionID(6)),  // not in the foreground
            .background(SessionID(4)), .background(SessionID(7)),      // archived: activate to reconnect
            .disconnect(s1, cause: reclaim), .disconnect(s2, cause: reclaim),       // R6
            .discard(s3, cause: reclaim), .discard(SessionID(4), cause: reclaim),   // R12
            .discard(SessionID(7), cause: reclaim),
            .beginTask(BeginTaskRequest(app: maps)), .beginTask(BeginTaskRequest(session: SessionID(7))),
            .suspend(mail, cause: reclaim), .suspend(maps, cause: reclaim), .suspend(notes, cause: reclaim),
        ]
        for command in refused { h.refuseTransition(command) }
        // An app holding a task cannot be suspended early either.
        h.steps(.background(s1))
        h.steps(.background(s2))
        _ = h.beginTask(app: mail)
        h.refuseTransition(.suspend(mail, cause: reclaim))
    }

    @Test func invalidTransitionsSayWhatForbidsThem() {
        var h = world()
        func transition(_ command: Command) -> InvalidTransition? {
            do { try h.run(command) } catch {
                if case .invalidTransition(let t) = error { return t }
            }
            return nil
        }
        let d = transition(.deactivate(s3))
        #expect(d?.command == "deactivate" && d?.app == mail && d?.session == s3 && d?.state == "background")
        #expect(transition(.background(SessionID(4)))?.state == "archived")
        #expect(transition(.terminate(notes))?.state == "notRunning")
        #expect(transition(.launch(maps))?.state == "suspended")
        #expect(transition(.beginTask(BeginTaskRequest(app: maps)))?.reason == "a suspended app runs no code")
        #expect(transition(.disconnect(s1, cause: .reclaim(note)))?.reason == "reclaim only disconnects background scenes")
        #expect(transition(.discard(s3, cause: .reclaim(note)))?.reason == "memory pressure never discards a session")
        #expect(d.map { LifecycleError.invalidTransition($0).description }
                == "cannot deactivate session s3 (background): only a scene in the foreground can be deactivated")
    }

    @Test func errorDescriptions() {
        #expect(LifecycleError.noSuchApp(mail).description == "no such app: com.example.mail")
        #expect(LifecycleError.noSuchSession(s1).description == "no such session: s1")
        #expect(LifecycleError.sessionDiscarded(s2).description == "session s2 was discarded")
        #expect(LifecycleError.noSuchTask(TaskToken(3)).description == "no such background task: t3")
        #expect(LifecycleError.invalidArgument(name: "x", reason: "y").description == "invalid x: y")
    }

    /// Due timers fire before the command even when the command is then refused; their effects
    /// are kept and the command changes nothing more.
    @Test func timersStillFireBeforeARefusedCommand() throws {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.background(s1))
        #expect(throws: LifecycleError.noSuchSession(unknownSession)) {
            try h.run(.activate(unknownSession), at: at(6))
        }
        #expect(events(h.lastEffects).map(Step.init) == [suspendedStep])
        #expect(h.process(mail) == .suspended)
    }

    // MARK: Target equals the current state: success, no events

    @Test func commandsThatAreAlreadyDoneEmitNothing() {
        var h = world()
        for command: Command in [.activate(s1), .deactivate(s2), .background(s3), .background(SessionID(6)),
                                 .disconnect(SessionID(4)), .disconnect(SessionID(7)),
                                 .disconnect(SessionID(4), cause: .reclaim(note)),
                                 .memoryWarning(apps: []), .memoryWarning(apps: [maps, notes])] {
            h.steps(.tick)
            let before = h.engine.snapshot
            #expect(h.steps(command) == [], "\(command)")
            #expect(h.lastEffects.isEmpty, "\(command): \(h.lastEffects)")
            #expect(h.engine.snapshot == before, "\(command)")
        }
        // The suspended app stays suspended: a background scene asked to go to the background
        // does not need its process.
        #expect(h.process(maps) == .suspended)
    }
}
