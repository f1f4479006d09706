import SceneCore

/// Which stretch of time a chart shows.
public enum ChartWindow: Sendable, Equatable {
    /// The latest episode (pressure, or reclaim actions) with a margin before and after; all
    /// of it when nothing happened.
    case latestEpisode
    /// Everything the series hold.
    case all
}

/// Finding episodes and cutting series to a window (times in milliseconds).
enum ChartEpisodes {
    /// Periods of pressure in any series, merged where they nearly touch: the series' own
    /// (a live daemon's level), usage at or over the high watermark, and each reclaim action.
    static func find(_ series: [SVGChart.Series], highWatermark: Double) -> [ClosedRange<Int64>] {
        var spans: [ClosedRange<Int64>] = []
        var first = Int64.max, last = Int64.min
        for s in series {
            spans += s.pressure
            let points = s.result.points
            if let a = points.first?.time, let b = points.last?.time { first = min(first, a); last = max(last, b) }
            var openedAt: Int64?
            for p in points {
                let pressed = p.budget.map { $0 > 0 && Double(p.usage) >= Double($0) * highWatermark } ?? false
                if pressed, openedAt == nil { openedAt = p.time }
                if !pressed, let o = openedAt {
                    spans.append(o...max(o, p.time))
                    openedAt = nil
                }
            }
            if let o = openedAt, let end = points.last?.time { spans.append(o...max(o, end)) }
            for m in s.result.marks { spans.append(m.time...m.time) }
        }
        // Actions seconds apart in one episode (the settle time between batches) stay one.
        let gap = max(2_000, first < last ? (last - first) / 50 : 0)
        var merged: [ClosedRange<Int64>] = []
        for span in spans.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let current = merged.last, span.lowerBound <= current.upperBound + gap {
                merged[merged.count - 1] = current.lowerBound...max(current.upperBound, span.upperBound)
            } else {
                merged.append(span)
            }
        }
        return merged
    }

    /// The time range shown: the latest episode with a margin of 15 % of its length each side,
    /// within the data (an episode that has just begun is its first milliseconds); or all the data.
    static func window(_ series: [SVGChart.Series], _ choice: ChartWindow,
                       highWatermark: Double) -> (range: ClosedRange<Int64>, episode: ClosedRange<Int64>?) {
        var first = Int64.max, last = Int64.min
        for s in series {
            for t in s.result.points.map(\.time) + s.result.marks.map(\.time) + s.pressure.map(\.upperBound) {
                first = min(first, t)
                last = max(last, t)
            }
        }
        guard first <= last else { return (0...1, nil) }
        let all = first...max(last, first + 1)
        guard choice == .latestEpisode, let episode = find(series, highWatermark: highWatermark).last else {
            return (all, nil)
        }
        let margin = max((episode.upperBound - episode.lowerBound) * 15 / 100, 1)
        let start = max(first, episode.lowerBound - margin)
        let end = min(all.upperBound, episode.upperBound + margin)
        return (start...max(end, start + 1), episode)
    }

    /// The points inside `range`, led by the one in force at its start (moved to the start).
    static func clip(_ points: [TimelinePoint], to range: ClosedRange<Int64>) -> [TimelinePoint] {
        var out: [TimelinePoint] = []
        var before: TimelinePoint?
        for p in points {
            if p.time <= range.lowerBound {
                before = p
                continue
            }
            if p.time > range.upperBound { break }
            if out.isEmpty, let b = before { out.append(TimelinePoint(time: range.lowerBound, usage: b.usage, budget: b.budget)) }
            out.append(p)
        }
        if out.isEmpty, let b = before { out.append(TimelinePoint(time: range.lowerBound, usage: b.usage, budget: b.budget)) }
        return out
    }
}
