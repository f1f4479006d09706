import Testing
@testable import SceneCore

/// A task warned before sleep suspended its app is warned anew when the app resumes (by Resume,
/// a wake, an Open): a new stay in the background, with its budget; a resumed app must not hold
/// an overdue task (found by the randomized background runs).
@Suite struct SleepResumeTests {
    @Test(arguments: ["resume", "wake", "open"])
    func graceRestartsWhenASleepingAppResumes(_ how: String) throws {
        var h = Harness()
        let s = h.connect(mail, background: true)
        let t = h.beginTask(app: mail)
        let budget = h.engine.configuration.backgroundTaskBudget
        let grace = h.engine.configuration.expirationGrace
        #expect(h.tick(at: Timestamp.zero + budget) == [expireStep(nil)])
        h.steps(.suspend(mail, cause: .sleep), at: Timestamp.zero + budget + .milliseconds(1))
        let later = Timestamp.zero + budget + grace + .seconds(60)
        h.now = later
        switch how {
        case "resume": #expect(h.steps(.resume(mail, cause: .sleep)) == [resumedStep])
        case "wake":
            h.steps(.queueNotification(app: mail, payload: "{}", priority: .normal))
            #expect(h.steps(.wake(WakeRequest(app: mail, notifications: [NotificationID(1)]))).first == resumedStep)
        default:
            let (_, steps) = h.open(mail, url("mail:1"), session: s, activate: false)
            #expect(steps == [resumedStep, opened(s, .background)])
        }
        #expect(h.engine.tasks[t]?.expirationSentAt == nil)
        #expect(h.lastEffects.contains(.taskChanged(t)))
        if how == "open" { return }  // an Open to a background scene: budget from the resumption
        #expect(h.tick(at: later + budget - .milliseconds(1)).isEmpty)
        #expect(h.tick(at: later + budget) == [expireStep(nil)])
        #expect(h.tick(at: later + budget + grace).last == terminatedStep)
    }
}
