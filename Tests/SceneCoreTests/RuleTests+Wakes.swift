import Testing
@testable import SceneCore

/// R34: the engine keeps it in a wake scenario (every Harness command runs the checker), and
/// the checker reports it when that log is altered to break it.
@Suite struct WakeRuleTests {
    /// A suspended app woken for a task and a notification, warned at the task's deadline,
    /// suspended again when the last item closes.
    static func wakeLog() -> [LifecycleEvent] {
        var h = Harness()
        h.suspendedApp(mail)
        h.steps(refreshTask(mail, "feed"))
        let n = h.notify(mail)
        h.steps(.wake(WakeRequest(app: mail, tasks: ["feed"], notifications: [n])), at: at(10))
        h.steps(.endWake(mail, .notification(n), success: true), at: at(11))
        h.tick(at: at(40))
        h.steps(.endWake(mail, .task("feed"), success: true), at: at(41))
        return h.log
    }

    @Test func theUnalteredLogIsClean() {
        let log = Self.wakeLog()
        #expect(log.map(\.name) == [.didFinishLaunching, .suspended, .resumed, .performBackgroundTask,
                                    .didReceiveNotification, .backgroundTaskWillExpire, .suspended])
        #expect(RuleTests.rules(log).isEmpty)
    }

    @Test func aWakeEventForASuspendedProcess() {
        let log = Self.wakeLog()
        let i = RuleTests.index(log, .resumed)
        #expect(RuleTests.rules(RuleTests.removing(log, i)).contains(.R34))
    }

    @Test func aResumptionForAWakeWithoutItsEvent() {
        var log = Array(Self.wakeLog().prefix(3))
        var memory = log[2]
        memory.name = .didReceiveMemoryWarning
        memory.cause = .request
        memory.detail = .none
        log.append(memory)
        #expect(RuleTests.rules(log).contains(.R34))
    }

    @Test func aWakeMovesAScene() {
        var h = Harness()
        let s = h.connect(mail)
        h.steps(.background(s))
        var log = h.log
        log[log.count - 1].cause = .background
        #expect(RuleTests.rules(log) == [.R34])
    }

    @Test func aWakeTaskWarnedBeforeItsDeadline() {
        var log = Self.wakeLog()
        let i = RuleTests.index(log, .backgroundTaskWillExpire)
        log[i].time = at(20)
        #expect(RuleTests.rules(log).contains(.R34))
        // Warned early by the system (pressure) is allowed.
        log[i].cause = .background
        #expect(RuleTests.rules(log).isEmpty)
    }

    @Test func aWakeEventWithoutItsItem() {
        var log = Self.wakeLog()
        let i = RuleTests.index(log, .didReceiveNotification)
        log[i].detail = .none
        #expect(RuleTests.rules(log) == [.stream])
    }
}
