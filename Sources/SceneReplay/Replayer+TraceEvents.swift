import SceneCore
import SceneTrace

/// The trace's own events, fed to the engine (and the controller's override).
extension Replayer {
    mutating func command(_ c: Command, at t: Timestamp) -> Bool {
        inputObserver?(.command(c), t)
        var effects: [Effect] = []
        do {
            try engine.handle(c, now: t, effects: &effects)
            return true
        } catch {
            metrics.traceRefusals += 1
            if result.notes.count < 5 { result.notes.append("t=\(t.microseconds / 1000) ms: \(error)") }
            return false
        }
    }

    mutating func appID(for scene: TraceScene) -> AppID {
        if let name = scene.app { return appID(named: name) }
        if let id = appOf[scene.name] { return id }
        let id = AppID("trace.scene\(appOf.count + 1)")!
        appOf[scene.name] = id
        appName[id] = scene.name
        return id
    }

    mutating func appID(named name: String) -> AppID {
        if let id = namedApps[name] { return id }
        let id = (realAppNames ? AppID(name) : nil) ?? AppID("trace.app\(namedApps.count + 1)")!
        namedApps[name] = id
        appName[id] = name
        return id
    }

    mutating func open(_ scene: TraceScene, at t: Timestamp) {
        let app = appID(for: scene)
        let request = ConnectRequest(app: app, footprint: scene.bytes, background: true,
                                     restoreCostMs: scene.restoreMs, isProtected: scene.isProtected)
        var effects: [Effect] = []
        inputObserver?(.command(.connect(request)), t)
        guard case .session(let id)? = try? engine.handle(.connect(request), now: t, effects: &effects) else {
            metrics.traceRefusals += 1
            return
        }
        if let name = scene.app, let base = appBase[name], engine.apps[app]?.baseFootprint != base {
            _ = command(.setAppFootprint(app, base), at: t)
        }
        sessionOf[scene.name] = id
        sceneOf[id] = scene.name
        openLine[scene.name] = scene
        capDiscarded.remove(scene.name)
    }

    /// One trace line: the scene's or app's command on the engine, or a pressure input. A line
    /// about a scene that is gone, or that the engine's state makes moot, is skipped.
    mutating func apply(_ event: TraceEvent, at t: Timestamp) {
        switch event.kind {
        case .meta, .settings, .decide: break
        case .ackProfile(let profile): acks[profile.scene] = profile
        case .open(let scene): open(scene, at: t)
        case .activate(let name): activate(name, at: t)
        case .deactivate(let name): deactivate(name, at: t)
        case .background(let name): background(name, at: t)
        case .suspend(let name): suspend(name, at: t)
        case .disconnect(let name): disconnect(name, at: t)
        case .close(let name): close(name, at: t)
        case .mem(let name, let bytes): setFootprint(name, bytes, at: t)
        case .protect(let name, let on): protect(name, on, at: t)
        case .appMem(let name, let bytes): setAppFootprint(name, bytes, at: t)
        case .launch(let name): launch(name, at: t)
        case .terminate(let name): terminate(name, at: t)
        case .budget(let budget): if !measureOnly { setBudget(budget) }
        case .pressure(let level): setOverride(level.map { PressureOverride(level: $0) }, at: t)
        case .timedPressure(let level, let ms): setOverride(PressureOverride(level: level, until: t + .milliseconds(ms)), at: t)
        }
    }

    // MARK: - Scenes

    @inline(__always)
    mutating func deactivate(_ name: String, at t: Timestamp) {
        guard let id = sessionOf[name], engine.sessions[id]?.sceneState == .foregroundActive else { return }
        _ = command(.deactivate(id), at: t)
    }

    @inline(__always)
    mutating func background(_ name: String, at t: Timestamp) {
        guard let id = sessionOf[name], let s = engine.sessions[id], s.condition == .live else { return }
        _ = command(.background(id), at: t)
    }

    /// Suspends the scene's app (the engine refuses while the app has a foreground scene or a task).
    @inline(__always)
    mutating func suspend(_ name: String, at t: Timestamp) {
        guard let id = sessionOf[name], let s = engine.sessions[id], engine.apps[s.app]?.process == .running else { return }
        _ = command(.suspend(s.app, cause: .request), at: t)
    }

    @inline(__always)
    mutating func disconnect(_ name: String, at t: Timestamp) {
        guard let id = sessionOf[name], engine.sessions[id]?.condition == .live else { return }
        _ = command(.disconnect(id, cause: .request), at: t)
    }

    /// The user discards the session: the scene's name is free again.
    mutating func close(_ name: String, at t: Timestamp) {
        guard let id = sessionOf.removeValue(forKey: name) else { return }
        sceneOf[id] = nil
        capDiscarded.remove(name)
        reclaimedAt[id] = nil
        if engine.sessions[id] != nil { _ = command(.discard(id, cause: .request), at: t) }
        controller.policy.noteDiscarded(id)
    }

    /// A new resident size, kept in the scene's open line too for a cold reopen.
    mutating func setFootprint(_ name: String, _ bytes: UInt64, at t: Timestamp) {
        guard let id = sessionOf[name], engine.sessions[id] != nil else { return }
        _ = command(.setFootprint(id, bytes), at: t)
        if var line = openLine[name] {
            line.bytes = bytes
            openLine[name] = line
        }
    }

    @inline(__always)
    mutating func protect(_ name: String, _ on: Bool, at t: Timestamp) {
        guard let id = sessionOf[name], engine.sessions[id] != nil else { return }
        _ = command(.setProtected(id, on), at: t)
    }

    // MARK: - Apps

    /// An app's own footprint: now if it runs, and whenever it is launched or connects later.
    mutating func setAppFootprint(_ name: String, _ bytes: UInt64, at t: Timestamp) {
        appBase[name] = bytes
        if let id = namedApps[name], engine.apps[id] != nil { _ = command(.setAppFootprint(id, bytes), at: t) }
    }

    mutating func launch(_ name: String, at t: Timestamp) {
        let id = appID(named: name)
        guard engine.apps[id]?.process ?? .notRunning == .notRunning else { return }
        _ = command(.launch(id), at: t)
        if let base = appBase[name], engine.apps[id]?.baseFootprint != base { _ = command(.setAppFootprint(id, base), at: t) }
    }

    @inline(__always)
    mutating func terminate(_ name: String, at t: Timestamp) {
        guard let id = namedApps[name], let app = engine.apps[id], app.process != .notRunning else { return }
        _ = command(.terminate(id, cause: .request), at: t)
    }

    // MARK: - Pressure

    /// An absolute budget keeps its ratio to the trace's first one under the caller's override.
    mutating func setBudget(_ budget: TraceBudget) {
        switch budget {
        case .bytes(let b):
            if let override = settings.budget, let first = firstTraceBudget, first > 0 {
                baseBudget = UInt64((Double(b) * Double(override) / Double(first)).rounded())
            } else {
                baseBudget = b
            }
            scale = 1
        case .scale(let k):
            scale = k
        case .unlimited:
            baseBudget = nil
            scale = 1
        }
    }

    /// An operator's override (nil: back to the gauge); not when only measuring.
    mutating func setOverride(_ override: PressureOverride?, at t: Timestamp) {
        guard !measureOnly else { return }
        controller.override = override
        inputObserver?(.override(controller.override), t)
    }

    // MARK: - Activation

    /// Foreground-active; a scene a cap discarded comes back cold, an archived one is restored.
    mutating func activate(_ name: String, at t: Timestamp) {
        guard var id = sessionOf[name] else { return }
        if engine.sessions[id] == nil {
            // A cap discarded the session while the trace still uses the scene: it comes back cold.
            guard capDiscarded.contains(name), let line = openLine[name] else { return }
            sceneOf[id] = nil
            open(line, at: t)
            guard let reopened = sessionOf[name] else { return }
            id = reopened
            metrics.restores += 1
            metrics.weightedRestoreCost += UInt64(line.restoreMs)
            metrics.reactivations += 1
        }
        guard let s = engine.sessions[id], !(s.condition == .live && s.sceneState == .foregroundActive) else { return }
        if s.condition == .archived {
            metrics.restores += 1
            metrics.weightedRestoreCost += UInt64(s.restoreCostMs)
            if settings.recordTimeline {
                let ago = reclaimedAt[id].map { "\((t - $0).microseconds / 1000) ms after its release" } ?? "?"
                result.log.append("t=\(t.microseconds / 1000) restore \(name) (\(s.activations) activations, \(ago))")
            }
        }
        if s.activations > 0 || s.condition == .archived { metrics.reactivations += 1 }
        if let at = reclaimedAt.removeValue(forKey: id), t - at <= settings.reclaim.regretWindow {
            metrics.regrets += 1
        }
        controller.policy.noteActivation(id, now: t)
        if command(.activate(id), at: t) { metrics.activations += 1 }
    }
}
