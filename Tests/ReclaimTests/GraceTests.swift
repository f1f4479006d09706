import Testing
@testable import SceneCore
import SceneReplay

/// The reclaim grace of §3.5 in the pure controller: notices instead of disconnects for scenes
/// whose app takes part, and what ack, defer and silence release.
@Suite("Reclaim grace")
struct GraceTests {
    /// Three 300 MB background scenes of apps that take part, aged, over a 1,000 MB budget.
    func world() throws -> (World, [SessionID]) {
        var w = World(budget: 1000 * MB) { $0.suspendEarly = false }
        let ids = [try w.open("a", 300 * MB), try w.open("b", 300 * MB), try w.open("c", 300 * MB)]
        w.advance(60)
        return (w, ids)
    }

    func evaluate(_ c: inout ReclaimController, _ w: World, usage: UInt64 = 950 * MB) -> ReclaimController.Outcome {
        c.evaluate(engine: w.engine, readings: PressureReadings(usage: usage, budget: 1000 * MB), now: w.now,
                   takesNotice: { _, _ in true })
    }

    func disconnects(_ steps: [ReclaimController.Step]) -> [SessionID] {
        steps.compactMap { if case .disconnect(let id, _) = $0.command { id } else { nil } }
    }

    @Test("a planned disconnect becomes a notice with the level's grace; nothing is disconnected before the answer")
    func noticeInsteadOfDisconnect() throws {
        let (w, _) = try world()
        var c = ReclaimController(policy: w.policy, gauge: PressureGauge())
        let outcome = evaluate(&c, w)
        #expect(c.level == .warning)
        #expect(disconnects(outcome.steps).isEmpty)
        #expect(outcome.notices.count == 1)
        let notice = try #require(outcome.notices.first)
        #expect(notice.deadline == w.now + .seconds(2))
        #expect(outcome.wake.map { $0 <= notice.deadline } == true, "woken by the deadline at the latest")
        // While the notice is out, the same scene is not chosen again, and its bytes count as going.
        let again = evaluate(&c, w)
        #expect(!again.notices.contains { $0.session == notice.session })
        #expect(disconnects(again.steps).isEmpty)
    }

    @Test("ack: the disconnect at once; silence: at the deadline, and a halved grace next time")
    func ackAndSilence() throws {
        var (w, _) = try world()
        var c = ReclaimController(policy: w.policy, gauge: PressureGauge())
        let notice = try #require(evaluate(&c, w).notices.first)
        let (resolution, steps) = c.answer(notice.id, .ack, app: notice.app, engine: w.engine)
        #expect(resolution == .disconnect(notice))
        #expect(disconnects(steps) == [notice.session])
        #expect(c.answer(notice.id, .ack, app: notice.app, engine: w.engine).0 == .unknown, "settled once")
        try w.run(steps[0].command)

        w.advance(2)
        let second = try #require(evaluate(&c, w, usage: 850 * MB).notices.first)
        w.now = second.deadline - .milliseconds(1)
        #expect(disconnects(evaluate(&c, w, usage: 850 * MB).steps).isEmpty, "not before the deadline")
        w.now = second.deadline
        let expired = evaluate(&c, w, usage: 850 * MB)
        #expect(disconnects(expired.steps) == [second.session])
        #expect(c.grace.counters.timeouts == 1 && c.grace.counters.acks == 1)
        #expect(c.grace.grace(for: second.app, level: .warning) == .seconds(1), "halved after a silence")
        #expect(c.grace.grace(for: second.app, level: .critical) == .milliseconds(125))
    }

    @Test("defer: the scene is kept for the episode and another is noticed at once; a second deferral is an ack")
    func deferral() throws {
        let (w, ids) = try world()
        var c = ReclaimController(policy: w.policy, gauge: PressureGauge())
        let first = try #require(evaluate(&c, w).notices.first)
        let (resolution, steps) = c.answer(first.id, .deferral, app: first.app, engine: w.engine)
        #expect(resolution == .deferred(first) && steps.isEmpty)
        let next = try #require(evaluate(&c, w).notices.first, "the next victim without waiting for the settle time")
        #expect(next.session != first.session && ids.contains(next.session))
        #expect(c.grace.isExcluded(first.session))
        // A scene may defer once per episode: asked again (after the others) its deferral counts as an ack.
        var grace = ReclaimGrace()
        let step = ReclaimStep(action: .disconnect(ids[0]), note: first.step.note)
        let n1 = grace.hold(step, session: ids[0], app: app("a"), level: .warning, now: w.now)
        #expect(grace.answer(n1.id, .deferral, app: app("a")) == .deferred(n1))
        let n2 = grace.hold(step, session: ids[0], app: app("a"), level: .warning, now: w.now)
        #expect(grace.answer(n2.id, .deferral, app: app("a")) == .disconnect(n2))
        #expect(grace.counters.refusedDeferrals == 1)
        grace.episodeEnded()
        #expect(!grace.isExcluded(ids[0]), "deferrals start afresh with the next episode")
    }

    @Test("an answer for another app, or for a scene back in the foreground, disconnects nothing")
    func answersThatReleaseNothing() throws {
        var (w, _) = try world()
        var c = ReclaimController(policy: w.policy, gauge: PressureGauge())
        let notice = try #require(evaluate(&c, w).notices.first)
        #expect(c.answer(notice.id, .ack, app: app("zzz"), engine: w.engine).0 == .unknown)
        try w.run(.activate(notice.session))
        let (_, steps) = c.answer(notice.id, .ack, app: notice.app, engine: w.engine)
        #expect(steps.isEmpty, "the user came back to it meanwhile")
    }

    @Test("the replayer answers from the ack profiles and counts the grace; without profiles nothing changes")
    func replayerCountsTheGrace() throws {
        let trace = TraceGenerator(scenario: .acks, seed: 7, size: .full).generate()
        var settings = ReplaySettings()
        let with = Replayer.run(trace, settings: settings).metrics
        settings.grace = nil
        let without = Replayer.run(trace, settings: settings).metrics
        #expect(with.graceNotices > 0, "scenes with profiles get notices")
        #expect(with.graceAcks + with.graceDeferrals + with.graceTimeouts <= with.graceNotices)
        #expect(with.graceAcks > 0 && with.graceTimeouts > 0, "prompt and silent profiles both occur: \(with.graceAcks) acks, \(with.graceTimeouts) timeouts")
        #expect(without.graceNotices == 0)
        #expect(with.foregroundViolations == 0 && with.pressureDiscards == 0)
        // The plain mix has no profiles: the grace changes nothing there.
        let mix = TraceGenerator(scenario: .mix, seed: 7, size: .full).generate()
        var plain = ReplaySettings()
        let a = Replayer.run(mix, settings: plain).metrics
        plain.grace = nil
        let b = Replayer.run(mix, settings: plain).metrics
        #expect(a.disconnects == b.disconnects && a.restores == b.restores && a.graceNotices == 0)
    }
}
