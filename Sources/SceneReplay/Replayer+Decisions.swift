import SceneCore

/// Decisions: the controller evaluated on the engine, its steps carried out and counted.
extension Replayer {
    mutating func decide(at now: Timestamp) {
        inputObserver?(.evaluate(budget: currentBudget), now)
        var effects: [Effect] = []
        _ = try? engine.handle(.tick, now: now, effects: &effects)
        // Answers to reclaim notices due by now are carried out before the controller looks.
        settleAnswers(through: now)
        sample(at: now)
        let usage = engine.residentBytes
        let graceBefore = observer == nil ? nil : controller.grace
        let budget = currentBudget
        let engineBefore = observer == nil ? nil : engine
        let policyBefore = observer == nil ? nil : controller.policy

        let nextUse: ((SessionID) -> Timestamp?)?
        if let rank = rankOverride {
            let scenes = sceneOf
            nextUse = { id in scenes[id].map { Timestamp(microseconds: Int64(rank($0))) } }
        } else if let oracle {
            let scenes = sceneOf
            let index = eventIndex
            nextUse = { id in scenes[id].flatMap { oracle.nextActivation(of: $0, after: index) }.map(Self.timestamp) }
        } else {
            nextUse = nil
        }
        let profiles = acks
        let scenes = sceneOf
        let takesNotice: ((SessionID, AppID) -> Bool)? = settings.grace == nil || profiles.isEmpty ? nil : { id, _ in
            scenes[id].flatMap { profiles[$0] } != nil
        }
        let started = clock?()
        let outcome = controller.evaluate(engine: engine, readings: PressureReadings(usage: usage, budget: budget),
                                          now: now, nextUse: nextUse, takesNotice: takesNotice)
        let level = controller.level
        if level > .normal && !inEpisode {
            inEpisode = true
            episodeOnset = now
            relieved = usage <= lowTarget
            if relieved { metrics.timesToRelief.append(0) }
            metrics.episodes += 1
        } else if level == .normal && inEpisode {
            inEpisode = false
            if !relieved { metrics.unrelievedEpisodes += 1 }
        }
        scheduleAnswers(outcome.notices, at: now)
        wake = outcome.wake
        if let next = answers.first?.time, wake.map({ next < $0 }) ?? true { wake = next }
        guard let plan = outcome.plan else {
            // Only notices whose deadline passed: their disconnects, without a new plan.
            if !outcome.steps.isEmpty { execute(outcome.steps, at: now, usage: usage) }
            return
        }
        if let started, let clock {
            let ended = clock()
            metrics.decisionMicros.append(Double(ended &- started) / 1000)
        }
        metrics.decisions += 1
        if plan.unrelievable { metrics.unrelievablePlans += 1 }
        execute(outcome.steps, at: now, usage: usage)
        sample(at: now)

        if let observer, let engineBefore, let policyBefore {
            observer(DecisionRecord(time: now, level: level, external: outcome.external, usageBefore: usage,
                                    usageAfter: engine.residentBytes, budget: budget, lowTarget: lowTarget,
                                    plan: plan, engineBefore: engineBefore, policyBefore: policyBefore,
                                    graceBefore: graceBefore ?? controller.grace,
                                    pendingBytesAfter: controller.grace.pendingBytes(engine)))
        }
    }

    /// The ack profile says when and how each noticed scene answers: within its grace, an ack
    /// (or a deferral) at its latency; a profile without latency, or a slower one, is silent
    /// and the controller disconnects at the deadline.
    mutating func scheduleAnswers(_ notices: [ReclaimGrace.Notice], at now: Timestamp) {
        for n in notices {
            guard let name = sceneOf[n.session], let profile = acks[name], let ms = profile.latencyMs else { continue }
            let at = now + .milliseconds(ms)
            guard at < n.deadline else { continue }
            answers.append((at, n.id, n.app, profile.defers ? .deferral : .ack))
        }
        answers.sort { ($0.time, $0.id) < ($1.time, $1.id) }
    }

    /// Answers due by `now`, in time order: their disconnects are carried out now.
    mutating func settleAnswers(through now: Timestamp) {
        while let first = answers.first, first.time <= now {
            answers.removeFirst()
            let (_, steps) = controller.answer(first.id, first.answer, app: first.app, engine: engine)
            if !steps.isEmpty { execute(steps, at: now, usage: engine.residentBytes) }
        }
    }

    mutating func execute(_ steps: [ReclaimController.Step], at now: Timestamp, usage: UInt64) {
        let sessionsBefore = engine.sessions.count
        var allowedRemovals = 0
        let capsOn = settings.reclaim.maxSessions > 0 || settings.reclaim.archivedMaxAge > .zero
        var freed: UInt64 = 0
        var batch = false
        for planned in steps {
            let step = planned.step
            let cause = EventCause.reclaim(step.note)
            switch step.action {
            case .memoryWarning(let apps):
                if reclaimCommand(.memoryWarning(apps: apps, cause: cause), at: now) {
                    metrics.warnings += 1
                    mark(.warning, at: now)
                }
            case .suspend(let app):
                if reclaimCommand(.suspend(app, cause: cause), at: now) {
                    metrics.suspensions += 1
                    mark(.suspend, at: now)
                }
            case .disconnect(let id):
                batch = true
                guard let s = engine.sessions[id] else {
                    metrics.refusedCommands += 1
                    continue
                }
                if s.condition == .live && s.sceneState.isForeground { metrics.foregroundViolations += 1 }
                let live = s.condition == .live
                if reclaimCommand(.disconnect(id, cause: cause), at: now) && live {
                    metrics.disconnects += 1
                    freed += s.footprint
                    victim(s, at: now)
                    mark(.disconnect, at: now)
                }
            case .terminate(let app):
                batch = true
                guard let record = engine.apps[app] else {
                    metrics.refusedCommands += 1
                    continue
                }
                if record.hasForegroundScene { metrics.foregroundViolations += 1 }
                let live = record.sessions.compactMap { engine.sessions[$0] }.filter { $0.condition == .live }
                let running = record.process != .notRunning
                if reclaimCommand(.terminate(app, cause: cause), at: now) {
                    metrics.terminations += 1
                    if running { freed += record.baseFootprint }
                    for s in live {
                        freed += s.footprint
                        victim(s, at: now)
                    }
                    mark(.terminate, at: now)
                }
            case .discard(let id):
                let archived = engine.sessions[id]?.condition == .archived
                if reclaimCommand(planned.command, at: now) {
                    metrics.capDiscards += 1
                    if capsOn && archived { allowedRemovals += 1 }
                    reclaimedAt[id] = nil
                    controller.executed(planned, succeeded: true)
                    if let name = sceneOf[id] { capDiscarded.insert(name) }
                    mark(.discard, at: now)
                }
            }
        }
        let removed = sessionsBefore - engine.sessions.count
        if removed > allowedRemovals { metrics.pressureDiscards += removed - allowedRemovals }
        if batch {
            let target = usage > lowTarget ? usage - lowTarget : 0
            if freed > target { metrics.overkillBytes += freed - target }
        }
    }

    mutating func reclaimCommand(_ c: Command, at now: Timestamp) -> Bool {
        var effects: [Effect] = []
        do {
            try engine.handle(c, now: now, effects: &effects)
            stepObserver?(c, true, now)
            if settings.recordActions, let action = describe(c, at: now) { result.actions.append(action) }
            return true
        } catch {
            stepObserver?(c, false, now)
            metrics.refusedCommands += 1
            if result.notes.count < 5 { result.notes.append("t=\(now.microseconds / 1000) ms: refused \(error)") }
            return false
        }
    }

    mutating func victim(_ s: SceneSession, at now: Timestamp) {
        metrics.victims += 1
        if settings.recordTimeline {
            result.log.append("t=\(now.microseconds / 1000) victim \(sceneOf[s.id] ?? "?") (\(s.activations) activations, \(s.footprint / 1_000_000) MB, level \(controller.level))")
        }
        if s.isProtected { metrics.protectedVictims += 1 }
        reclaimedAt[s.id] = now
        if let name = sceneOf[s.id], let profile = acks[name] {
            if profile.defers { metrics.deferringVictims += 1 }
            if let ms = profile.latencyMs {
                if ms > settings.slowAckMs { metrics.slowAckVictims += 1 }
            } else {
                metrics.silentVictims += 1
            }
        }
    }

    mutating func mark(_ kind: TimelineMark.Kind, at now: Timestamp) {
        guard settings.recordTimeline else { return }
        result.marks.append(TimelineMark(time: now.microseconds / 1000, kind: kind, usage: engine.residentBytes))
    }

    /// A reclaim command in the words of the daemon's pressure history, its target named as
    /// the trace names it.
    func describe(_ c: Command, at now: Timestamp) -> ReplayAction? {
        let ms = now.microseconds / 1000
        func app(_ id: AppID) -> String { appName[id] ?? id.rawValue }
        func scene(_ id: SessionID) -> String { sceneOf[id] ?? id.description }
        switch c {
        case .memoryWarning(let list, _):
            let apps = list ?? []
            // As PressureHistory bounds it: three names, then how many more.
            let named = apps.prefix(3).map(app).joined(separator: ",")
            return ReplayAction(time: ms, kind: "warning", target: apps.count > 3 ? named + " and \(apps.count - 3) more" : named)
        case .suspend(let id, _): return ReplayAction(time: ms, kind: "suspend", target: app(id))
        case .disconnect(let id, _): return ReplayAction(time: ms, kind: "disconnect", target: scene(id))
        case .terminate(let id, _): return ReplayAction(time: ms, kind: "terminate", target: app(id))
        case .discard(let id, _): return ReplayAction(time: ms, kind: "discard", target: scene(id))
        default: return nil
        }
    }
}
