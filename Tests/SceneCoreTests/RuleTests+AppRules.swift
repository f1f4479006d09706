import Testing
@testable import SceneCore

// RuleTests, continued: the app rules (R18–R27) and what lies beyond the numbered rules.
extension RuleTests {
    // MARK: App rules

    @Test func r18TheEventCarriesTheDerivedAppState() {
        var log = homeAndBack().log
        log[Self.index(log, .willResignActive)].appState = .active
        #expect(Self.rules(log).contains(.R18))
    }

    @Test func r19NothingBeforeDidFinishLaunching() {
        let log = homeAndBack().log
        #expect(log[0].name == .didFinishLaunching)
        #expect(Self.rules(Array(log.dropFirst())).contains(.R19))
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.terminate(mail))
        h.steps(.activate(s1))
        var relaunch = h.log
        relaunch.remove(at: Self.lastIndex(relaunch, .didFinishLaunching))
        #expect(Self.rules(relaunch).contains(.R19))
    }

    @Test func r21SuspensionIsSilentAndOnlyFromTheBackground() {
        let log = homeAndBack().log
        // Nothing is delivered between suspended and resumed.
        let s = Self.index(log, .suspended), r = Self.index(log, .resumed)
        #expect(r == s + 1)
        #expect(Self.rules(Self.removing(log, r)).contains(.R21))
        var early = log
        early[s].time = at(4)
        #expect(Self.rules(early).contains(.R21))
        #expect(!Self.rules(early, timing: nil).contains(.R21))
        var foreground = Array(log.prefix(5))
        var suspended = log[s]
        suspended.time = at(0)
        foreground.append(suspended)
        #expect(Self.rules(foreground).contains(.R21))
        // Within the delay of a background connection's didEnterBackground (the fixed engine bug).
        var b = Harness()
        b.steps(.launch(mail))
        _ = try? b.run(.connect(ConnectRequest(app: mail, background: true)), at: atMs(4_900))
        b.tick(at: at(10))
        var tooSoon = b.log
        tooSoon[tooSoon.count - 1].time = at(5)
        #expect(Self.rules(tooSoon).contains(.R21))
    }

    @Test func r22WillTerminateOnlyToARunningProcessOnce() {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.terminate(mail))
        _ = h.connect(maps, background: true)
        h.tick(at: at(5))
        h.steps(.terminate(maps))
        let log = h.log
        #expect(log.filter { $0.name == .willTerminate }.map(\.app) == [mail])
        // To a suspended process.
        var suspended = log
        var will = log[Self.index(log, .willTerminate)]
        will.app = maps
        will.appState = .background
        suspended.insert(will, at: suspended.count - 1)
        #expect(Self.rules(suspended).contains(.R22))
        // Twice.
        var twice = log
        let w = Self.index(log, .willTerminate)
        twice.insert(log[w], at: w + 1)
        #expect(Self.rules(twice).contains(.R22))
        // Missing for a running process (strict).
        #expect(Self.rules(Self.removing(log, w)).contains(.R22))
        #expect(!Self.rules(Self.removing(log, w), strict: false).contains(.R22))
    }

    @Test func r24TasksExpireThenTheWatchdogKills() {
        let log = tasks().log
        let expire = Self.index(log, .backgroundTaskWillExpire), kill = Self.index(log, .terminated)
        #expect(log[kill].time == log[expire].time + .seconds(2))
        #expect(!log.contains { $0.name == .willTerminate })
        #expect(Self.rules(Self.removing(log, expire)).contains(.R24))
        var early = log
        early[kill].time = log[expire].time + .seconds(1)
        early[kill + 1..<early.count].indices.forEach { early[$0].time = max(early[$0].time, early[kill].time) }
        #expect(Self.rules(early).contains(.R24))
        var soonExpired = log
        soonExpired[expire].time = at(10)
        #expect(Self.rules(soonExpired).contains(.R24))
        var withWill = log
        var will = log[expire]
        will.name = .willTerminate
        will.detail = .none
        withWill.insert(will, at: kill)
        #expect(Self.rules(withWill).contains(.R24))
        // While a scene is in the foreground.
        var h = Harness()
        _ = h.connect(mail)
        var foreground = h.log
        var expiry = log[expire]
        expiry.time = h.log.last!.time
        expiry.appState = .active
        foreground.append(expiry)
        #expect(Self.rules(foreground).contains(.R24))
    }

    @Test func r25MemoryWarningsOnlyToRunningProcesses() {
        let log = tasks().log
        #expect(log.filter { $0.name == .didReceiveMemoryWarning }.isEmpty)  // mail dead, maps suspended
        var h = tasks()
        h.steps(.launch(notes))
        #expect(h.steps(.memoryWarning(apps: nil)) == [memoryWarningStep])
        var warned = log
        var w = h.log.last!
        w.app = maps
        warned.append(w)
        #expect(Self.rules(warned).contains(.R25))
    }

    @Test func r26RestoredSessionsReconnectWithoutConfiguration() {
        let log = reclaimAndReconnect().log
        let relaunch = Self.lastIndex(log, .didFinishLaunching)
        #expect(log[relaunch + 1].name == .willConnectTo && log[relaunch + 1].detail == .connect(restoration: .json("{\"r\":1}"), reconnect: true))
        var unmarked = log
        unmarked[relaunch + 1].detail = .connect(restoration: .json("{\"r\":1}"), reconnect: false)
        #expect(Self.rules(unmarked).contains(.R26))
        var configured = log
        var config = log[1]
        config.time = log[relaunch].time
        configured.insert(config, at: relaunch + 1)
        #expect(Self.rules(configured).contains(.R26))
    }

    @Test func r27LaunchOrder() {
        let log = homeAndBack().log
        #expect(log.prefix(5).map(\.name) == [.didFinishLaunching, .configurationForConnecting, .willConnectTo,
                                               .willEnterForeground, .didBecomeActive])
        var swapped = log
        swapped.swapAt(1, 2)
        #expect(Self.rules(swapped).contains(.R27))
        #expect(Self.rules(Self.removing(log, 3)).contains(.R27))
    }

    // MARK: Beyond the numbered rules

    @Test func s10ShortcutIsRejectedOnlyInStrictMode() {
        var h = Harness()
        _ = h.connect(mail)
        h.steps(.deactivate(s1))
        h.steps(.discard(s1))
        let log = Self.removing(h.log, Self.index(h.log, .didEnterBackground))
        #expect(Self.rules(log).contains(.transition))
        #expect(Self.rules(log, strict: false).isEmpty)
    }

    @Test func theStreamMustGrowInSequenceAndTime() {
        let log = homeAndBack().log
        var checker = ConformanceChecker()
        checker.check(Array(log.prefix(3)))
        #expect(checker.check(log[2]).map(\.rule).contains(.stream))
        var late = ConformanceChecker()
        var back = log
        back[back.count - 1].time = at(0)
        #expect(late.check(back).map(\.rule).contains(.stream))
        var gaps = ConformanceChecker(options: .init(consecutiveSequence: true))
        var skipped = log
        skipped[3].seq += 100
        #expect(gaps.check(skipped).map(\.rule).contains(.stream))
        var lenient = ConformanceChecker(options: .init(consecutiveSequence: false))
        #expect(lenient.check(Array(skipped.prefix(4))).isEmpty)
    }

    @Test func aStateChangeWithoutItsEventIsADisagreement() {
        var h = homeAndBack()
        var silent = h.engine
        var effects: [Effect] = []
        _ = try? silent.handle(.background(s1), now: at(7), effects: &effects)
        #expect(h.checker.disagreements(with: silent).map(\.rule).contains(.agreement))
        h.steps(.background(s1), at: at(7))
        #expect(h.checker.disagreements(with: h.engine).isEmpty)
    }

    @Test func corruptBookkeepingIsReported() {
        let base = reclaimAndReconnect().engine
        var counts = base
        counts.apps[mail]!.activeScenes += 1
        #expect(!ConformanceChecker.consistencyViolations(of: counts).isEmpty)
        var unlisted = base
        unlisted.apps[mail]!.sessions = []
        #expect(!ConformanceChecker.consistencyViolations(of: unlisted).isEmpty)
        var clock = base
        clock.apps[mail]!.idleSince = at(1)
        #expect(!ConformanceChecker.consistencyViolations(of: clock).isEmpty)
        var pending = base
        pending.apps[mail]!.pendingDiscards = [s2]
        #expect(!ConformanceChecker.consistencyViolations(of: pending).isEmpty)
        var overdue = homeAndBack().engine
        overdue.sessions[s1]!.sceneState = .background
        overdue.apps[mail]!.activeScenes = 0
        overdue.apps[mail]!.backgroundScenes = 1
        overdue.apps[mail]!.idleSince = at(0)
        overdue.apps[mail]!.backgroundEnteredAt = at(0)
        #expect(ConformanceChecker.consistencyViolations(of: overdue).contains { $0.message.contains("suspension was due") })
        #expect(ConformanceChecker.consistencyViolations(of: base).isEmpty)
    }

    @Test func violationsAreAccumulatedAndDescribed() {
        var checker = ConformanceChecker()
        let log = Self.renumbered(Array(homeAndBack().log.dropFirst()))
        let found = checker.check(log)
        #expect(!found.isEmpty && checker.violations == found && checker.eventsChecked == log.count)
        #expect(found[0].description.hasPrefix("[R19] #1 com.example.mail s1: "))
    }
}
