import Foundation
import Testing
@testable import SceneCore
@testable import SceneReplay
import SceneTrace

@Suite struct GeneratorTests {
    func fixture(_ scenario: Scenario) -> (path: String, generator: TraceGenerator) {
        let generator = TraceGenerator(scenario: scenario, seed: fixtureSeed, size: .fixture)
        return (fixturesDirectory() + "/" + generator.fileName, generator)
    }

    /// The shipped fixtures are exactly what the generator makes from their seeds.
    @Test(arguments: Scenario.allCases)
    func fixturesRegenerateByteForByte(_ scenario: Scenario) throws {
        let (path, generator) = fixture(scenario)
        let shipped = try String(contentsOfFile: path, encoding: .utf8)
        let regenerated = TraceWriter.write(generator.generate())
        #expect(regenerated == shipped, "regenerate with: scene-replay --generate \(scenario.rawValue) --seed \(fixtureSeed) --size fixture --out \(path)")
        let trace = try TraceParser.parse(shipped)
        #expect(trace.scenario == scenario.rawValue && trace.seed == fixtureSeed)
    }

    @Test func fixturesAreSmall() throws {
        var total = 0
        for scenario in Scenario.allCases {
            let attributes = try FileManager.default.attributesOfItem(atPath: fixture(scenario).path)
            total += (attributes[.size] as? Int) ?? .max
        }
        #expect(total <= 100_000)
    }

    @Test func sameSeedSameBytesOtherSeedOtherBytes() {
        for scenario in Scenario.allCases {
            let a = TraceWriter.write(TraceGenerator(scenario: scenario, seed: 42, size: .fixture).generate())
            let b = TraceWriter.write(TraceGenerator(scenario: scenario, seed: 42, size: .fixture).generate())
            let c = TraceWriter.write(TraceGenerator(scenario: scenario, seed: 43, size: .fixture).generate())
            #expect(a == b)
            #expect(a != c)
        }
    }

    /// Pinned outputs: the generator must not drift with the platform or the Swift version.
    @Test func thePseudoRandomNumbersArePinned() {
        var rng = SeededRandom(seed: 1)
        #expect((0..<3).map { _ in rng.next() } == [12_966_619_160_104_079_557, 9_600_361_134_598_540_522, 10_590_380_919_521_690_900])
        #expect(DeterministicMath.log(1) == 0)
        #expect(abs(DeterministicMath.log(2) - 0.693_147_180_559_945_3) < 1e-15)
        #expect(abs(DeterministicMath.exp(1) - 2.718_281_828_459_045) < 1e-15)
        #expect(abs(DeterministicMath.pow(10, 3) - 1_000) < 1e-9)
        #expect(abs(DeterministicMath.cosTwoPi(0.25)) < 1e-15)
    }

    // MARK: The scenarios have their shapes

    func events(_ scenario: Scenario, seed: UInt64 = 1) -> [TraceEvent] {
        TraceGenerator(scenario: scenario, seed: seed, size: .full).generate().events
    }

    func opens(_ events: [TraceEvent]) -> [TraceScene] {
        events.compactMap { if case .open(let s) = $0.kind { s } else { nil } }
    }

    @Test func theMixHasTwentyToEightyScenesWithZipfPopularity() {
        for seed in UInt64(1)...5 {
            let e = events(.mix, seed: seed)
            let names = Set(opens(e).map(\.name))
            #expect((20...80).contains(names.count))
            var uses: [String: Int] = [:]
            for event in e { if case .activate(let s) = event.kind { uses[s, default: 0] += 1 } }
            let counts = uses.values.sorted(by: >)
            #expect(counts[0] > 5 * counts[counts.count / 2], "a Zipf head")
            #expect(opens(e).filter(\.isProtected).count >= 1)
        }
    }

    /// The ingredients reproduce LSApp's published statistics.
    @Test func sessionsAreCalibratedOnLSApp() {
        var b = Builder(seed: 99)
        var unique: [Int] = [], switches: [Int] = [], lengths: [Double] = []
        for _ in 0..<20_000 {
            let u = b.uniqueApps()
            unique.append(u)
            switches.append(u == 1 ? 0 : b.switches(unique: u))
            lengths.append(b.sessionLength())
        }
        func median<T: Comparable>(_ v: [T]) -> T { v.sorted()[v.count / 2] }
        let meanUnique = Double(unique.reduce(0, +)) / Double(unique.count)
        let meanSwitches = Double(switches.reduce(0, +)) / Double(switches.count)
        #expect(median(unique) == 2)
        #expect(abs(meanUnique - 2.18) < 0.05, "mean unique apps \(meanUnique)")
        #expect(median(switches) == 2)
        #expect(abs(meanSwitches - 5.46) < 0.3, "mean switches \(meanSwitches)")
        #expect(Double(switches.filter { $0 <= 2 }.count) / Double(switches.count) > 0.54, "a clear median of 2")
        #expect(abs(median(lengths) - 106_000) < 5_000, "median session \(median(lengths)) ms")
    }

    @Test func pingPongHasTwoScenesAlternatingAndAScan() {
        let e = events(.pingpong)
        let actives = e.compactMap { if case .activate(let s) = $0.kind { s } else { nil } }
        #expect(actives.filter { $0 == "ping" }.count > 200 && actives.filter { $0 == "pong" }.count > 200)
        #expect(Set(actives.filter { $0.hasPrefix("scan") }).count == 24)
    }

    @Test func sizeMismatchHasOneGigabyteSceneAmongFiftyMegabyteOnes() {
        let scenes = opens(events(.size))
        #expect(scenes.filter { $0.bytes == 1_000_000_000 }.map(\.name) == ["big"])
        #expect(scenes.filter { $0.name != "big" }.allSatisfy { $0.bytes == 50_000_000 })
    }

    @Test func spikesDropTheBudgetByThirtyPercentForTenSeconds() {
        let budgets = events(.spikes).compactMap { e -> (Int64, Double)? in
            if case .budget(.scale(let k)) = e.kind { (e.time, k) } else { nil }
        }
        #expect(budgets.count >= 20)
        for pair in stride(from: 0, to: budgets.count - 1, by: 2) {
            #expect(budgets[pair].1 == 0.7 && budgets[pair + 1].1 == 1)
            #expect(budgets[pair + 1].0 - budgets[pair].0 == 10_000)
        }
    }

    @Test func ackProfilesCoverPromptSlowDeferringAndSilentScenes() {
        let profiles = events(.acks).compactMap { if case .ackProfile(let p) = $0.kind { p } else { nil } }
        #expect(profiles.contains { $0.latencyMs == nil })
        #expect(profiles.contains { $0.defers })
        #expect(profiles.contains { ($0.latencyMs ?? 0) > 2_000 && !$0.defers })
        #expect(profiles.contains { ($0.latencyMs ?? .max) <= 500 && !$0.defers })
    }

    @Test func theTraceBudgetIsHalfTheWorkingSet() {
        for scenario in Scenario.allCases {
            let trace = TraceGenerator(scenario: scenario, seed: 3, size: .fixture).generate()
            guard case .budget(.bytes(let b)) = trace.events[1].kind else {
                Issue.record("no budget line")
                continue
            }
            #expect(b == Replayer.workingSet(of: trace) / 2)
        }
    }
}
