/*
 * The usage chart: memory usage over the last minutes against the budget and the watermarks,
 * with the current pressure episode shaded. usageChartModel is pure (numbers in, shapes out);
 * drawUsageChart turns the model into SVG elements.
 */
"use strict";

(function (global) {
    const SVG = "http://www.w3.org/2000/svg";
    const WIDTH = 640;
    const HEIGHT = 180;
    const PLOT = { left: 64, right: 150, top: 12, bottom: 22 };

    /*
     * samples: [{time (µs since the epoch), usage, level}], oldest first; pressure: GetPressure's
     * reply; now in µs; windowUs the span shown. The scale follows usage: when usage is a small
     * part of the budget, the lines above the plot are named as off scale instead of squeezing
     * the usage line onto the axis.
     */
    function usageChartModel(samples, pressure, now, windowUs) {
        const start = now - windowUs;
        const shown = samples.filter(s => s.time >= start);
        const before = samples.filter(s => s.time < start).pop();
        if (before)
            shown.unshift({ time: start, usage: before.usage, level: before.level });
        const peak = shown.reduce((max, s) => Math.max(max, s.usage), pressure ? pressure.usage : 0);
        const marks = referenceLines(pressure);
        const highest = marks.reduce((max, m) => Math.max(max, m.bytes), 0);
        const yMax = peak >= highest * 0.2 ? Math.max(peak, highest) * 1.08 : Math.max(peak * 1.5, 1024 * 1024);
        const x = t => PLOT.left + (t - start) / windowUs * (WIDTH - PLOT.left - PLOT.right);
        const y = b => HEIGHT - PLOT.bottom - b / yMax * (HEIGHT - PLOT.top - PLOT.bottom);
        // Usage holds until the next sample: a step line.
        const points = [];
        shown.forEach((s, i) => {
            if (i > 0)
                points.push([x(s.time), y(shown[i - 1].usage)]);
            points.push([x(s.time), y(s.usage)]);
        });
        if (shown.length > 0)
            points.push([x(now), y(shown[shown.length - 1].usage)]);
        const episode = shownEpisode(pressure, start, now, x);
        return {
            width: WIDTH,
            height: HEIGHT,
            plot: PLOT,
            yMax,
            points,
            lines: marks.filter(m => m.bytes <= yMax).map(m => Object.assign({ y: y(m.bytes) }, m)),
            offScale: marks.filter(m => m.bytes > yMax),
            episode,
            windowLabel: "−" + (windowUs >= 120e6 ? Math.round(windowUs / 60e6) + " min" : Math.round(windowUs / 1e6) + " s"),
        };
    }

    // The current episode, else the last one if it ended within the window.
    function shownEpisode(pressure, start, now, x) {
        const current = pressure && pressure.episode;
        const last = pressure && pressure.lastEpisode;
        const episode = current || (last && last.endedAt && last.endedAt > start ? last : null);
        if (!episode)
            return null;
        const from = x(Math.max(start, episode.startedAt));
        const to = x(Math.min(now, episode.endedAt || now));
        const label = "episode " + episode.number + (current ? " (now)" : "");
        return { x: from, width: Math.max(1, to - from), label };
    }

    function referenceLines(pressure) {
        if (!pressure)
            return [];
        return [
            { name: "budget", bytes: pressure.budget },
            { name: "critical", bytes: pressure.criticalWatermark },
            { name: "high", bytes: pressure.highWatermark },
            { name: "low", bytes: pressure.lowWatermark },
        ].filter(m => typeof m.bytes === "number" && m.bytes > 0);
    }

    function element(name, attributes, text) {
        const node = document.createElementNS(SVG, name);
        for (const key in attributes)
            node.setAttribute(key, attributes[key]);
        if (text !== undefined)
            node.textContent = text;
        return node;
    }

    function drawUsageChart(svg, model, formatBytes) {
        svg.replaceChildren();
        svg.setAttribute("viewBox", "0 0 " + model.width + " " + model.height);
        const right = model.width - model.plot.right;
        const bottom = model.height - model.plot.bottom;
        if (model.episode)
            drawEpisode(svg, model, bottom);
        for (const line of model.lines)
            svg.append(element("line", { class: "mark mark-" + line.name, x1: model.plot.left, x2: right, y1: line.y, y2: line.y }));
        const labels = model.offScale.map((mark, i) => ({ y: model.plot.top + 10 + i * 13, text: "↑ " + mark.name + " " + formatBytes(mark.bytes) }))
            .concat(model.lines.map(line => ({ y: line.y + 4, text: line.name + " " + formatBytes(line.bytes) })));
        for (const label of spreadLabels(labels, 12))
            svg.append(element("text", { class: "mark-label", x: right + 6, y: label.y }, label.text));
        svg.append(element("line", { class: "axis", x1: model.plot.left, x2: right, y1: bottom, y2: bottom }));
        svg.append(element("text", { class: "axis-label", x: model.plot.left - 6, y: model.plot.top + 8, "text-anchor": "end" },
                           formatBytes(model.yMax)));
        svg.append(element("text", { class: "axis-label", x: model.plot.left - 6, y: bottom, "text-anchor": "end" }, "0"));
        svg.append(element("text", { class: "axis-label", x: model.plot.left, y: model.height - 4 }, model.windowLabel));
        svg.append(element("text", { class: "axis-label", x: right, y: model.height - 4, "text-anchor": "end" }, "now"));
        if (model.points.length > 0) {
            const path = model.points.map((p, i) => (i === 0 ? "M" : "L") + p[0].toFixed(1) + " " + p[1].toFixed(1)).join(" ");
            svg.append(element("path", { class: "usage", d: path }));
        }
    }

    // The episode's shade, and its name inside the plot on the side where it has room.
    function drawEpisode(svg, model, bottom) {
        const e = model.episode;
        svg.append(element("rect", { class: "episode", x: e.x, y: model.plot.top, width: e.width, height: bottom - model.plot.top }));
        const middle = (model.plot.left + model.width - model.plot.right) / 2;
        const atLeft = e.x > middle;
        svg.append(element("text", {
            class: "episode-label", x: atLeft ? e.x - 4 : e.x + 4, y: model.plot.top + 12, "text-anchor": atLeft ? "end" : "start",
        }, e.label));
    }

    // Labels at least `gap` apart, top to bottom, each as near its line as that allows.
    function spreadLabels(labels, gap) {
        const sorted = labels.slice().sort((a, b) => a.y - b.y);
        let last = -Infinity;
        return sorted.map(label => {
            const y = Math.max(label.y, last + gap);
            last = y;
            return { y, text: label.text };
        });
    }

    global.UsageChart = { usageChartModel, drawUsageChart };
})(window);
