/*
 * scened's Cockpit page: status, apps, sessions and events read over Varlink, and the
 * operator's actions. Nothing here decides who may do what: scened authorizes the credentials
 * of the bridge that opens the socket. Reads use the logged-in user's own bridge; actions ask
 * for Cockpit's administrative bridge when the user has turned administrative access on
 * (superuser "try"), else they too run as the user, and a refusal is shown as scened wrote it.
 * Data from the daemon reaches the page only as text (textContent), never as markup.
 */
"use strict";

(function () {
    const { VarlinkClient, VarlinkError } = window.Varlink;
    const MANAGER = "io.scened.Manager.";
    const DEFAULT_SOCKET = "/run/scened/io.scened.Manager";
    const REFRESH_MS = 2000;
    const EVENTS_KEPT = 100;
    const SESSIONS_SHOWN = 500;
    const WINDOW_US = 5 * 60 * 1e6;
    const MIN_WINDOW_US = 30 * 1e6;
    const CONFIRM_MS = 5000;

    const $ = id => document.getElementById(id);

    // ?socket=PATH in the page's address, or #/?socket=PATH inside Cockpit's shell.
    function socketPath() {
        const query = new URLSearchParams(window.location.search).get("socket");
        if (query)
            return query;
        const option = cockpit.location.options.socket;
        return typeof option === "string" && option ? option : DEFAULT_SOCKET;
    }

    const socket = socketPath();
    const page = {
        reader: new VarlinkClient(socket),
        actor: new VarlinkClient(socket, { superuser: "try" }),
        samples: [],
        historySeq: undefined,
        pressure: null,
        events: [],
        lastSeq: null,
        monitor: null,
        monitorStarted: false,
        refreshing: false,
        refreshAgain: false,
        refreshTimer: null,
        eventsTimer: null,
        filter: {},
        confirming: null,
    };

    /* Formatting. */

    function formatBytes(bytes) {
        if (typeof bytes !== "number")
            return "—";
        const units = ["B", "KiB", "MiB", "GiB", "TiB"];
        let value = bytes;
        let unit = 0;
        while (Math.abs(value) >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit += 1;
        }
        return (unit === 0 ? String(value) : value.toFixed(1)) + " " + units[unit];
    }

    function formatTime(us) {
        return typeof us === "number" && us > 0 ? new Date(us / 1000).toLocaleTimeString() : "—";
    }

    function formatDuration(us) {
        let s = Math.floor(us / 1e6);
        const parts = [];
        for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
            if (s >= size) {
                parts.push(Math.floor(s / size) + " " + unit);
                s %= size;
            }
        }
        parts.push(s + " s");
        return parts.slice(0, 2).join(" ");
    }

    function describeError(error) {
        if (error instanceof VarlinkError) {
            const message = error.parameters.message;
            return error.error + (message ? " — " + message : "");
        }
        return error && error.message ? error.message : String(error);
    }

    function cell(row, text, className) {
        const td = document.createElement("td");
        td.textContent = text === undefined || text === null ? "—" : String(text);
        if (className)
            td.className = className;
        row.append(td);
        return td;
    }

    function button(label, action, target, enabled) {
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = label;
        b.dataset.action = action;
        b.dataset.target = target;
        b.className = "act act-" + action.toLowerCase();
        b.disabled = !enabled;
        return b;
    }

    /* Status and chart. */

    function showStatus(status, pressure) {
        const level = $("pressure-level");
        level.textContent = pressure.level;
        level.className = "level level-" + pressure.level;
        $("pressure-override").textContent = pressure.override
            ? "(forced " + pressure.override + (pressure.overrideUntil ? " until " + formatTime(pressure.overrideUntil) : "") + ")"
            : "";
        const share = pressure.budget > 0 ? " (" + (100 * pressure.usage / pressure.budget).toFixed(1) + " %)" : "";
        $("usage").textContent = formatBytes(pressure.usage) + " of " + formatBytes(pressure.budget) + " budget" + share;
        $("watermarks").textContent = "low " + formatBytes(pressure.lowWatermark) + " · high " +
            formatBytes(pressure.highWatermark) + " · critical " + formatBytes(pressure.criticalWatermark);
        $("episode").textContent = describeEpisode(pressure);
        const m = pressure.measured;
        $("measured").textContent = m ? formatBytes(m.bytes) + " in " + m.apps + " apps (" + m.source + ")" : "not measured";
        $("app-counts").textContent = status.apps + " (" + status.runningApps + " running, " + status.suspendedApps + " suspended)";
        $("session-counts").textContent = status.sessions.live + " live, " + status.sessions.archived + " archived";
        $("daemon").textContent = "scened " + status.version + ", pid " + status.pid + ", up " + formatDuration(status.uptime);
    }

    function describeEpisode(pressure) {
        const e = pressure.episode;
        if (e) {
            return "#" + e.number + " since " + formatTime(e.startedAt) + ", peak " + e.peakLevel + ", freed " +
                formatBytes(e.bytesFreed) + " (" + e.disconnects + " disconnects, " + e.terminations + " terminations, " +
                e.suspensions + " suspensions)" + (e.unrelievable ? ", unrelievable" : "");
        }
        const last = pressure.lastEpisode;
        return last ? "none now; #" + last.number + " ended " + formatTime(last.endedAt) + ", freed " + formatBytes(last.bytesFreed)
            : "none";
    }

    // Samples are the daemon's own (taken when usage, budget or level changed), in its time.
    function mergeHistory(history) {
        const last = page.samples.length ? page.samples[page.samples.length - 1].time : -Infinity;
        for (const s of history.samples || []) {
            if (s.time > last)
                page.samples.push({ time: s.time, usage: s.usage, level: s.level, seq: s.seq });
        }
        if (page.samples.length)
            page.historySeq = page.samples[page.samples.length - 1].seq;
        const keepFrom = Date.now() * 1000 - 2 * WINDOW_US;
        const firstKept = page.samples.findIndex(s => s.time >= keepFrom);
        // The sample in force at the window's start is kept too.
        if (firstKept > 1)
            page.samples.splice(0, firstKept - 1);
    }

    // The last five minutes, or less (one at least) while the daemon's history is shorter, so
    // that a young daemon's episode is not squeezed against the right edge.
    function drawChart() {
        const first = page.samples.length ? page.samples[0].time : Infinity;
        const last = page.samples.length ? page.samples[page.samples.length - 1].time : 0;
        const now = Math.max(Date.now() * 1000, last);
        const span = Math.min(WINDOW_US, Math.max(MIN_WINDOW_US, now - first));
        const model = window.UsageChart.usageChartModel(page.samples, page.pressure, now, span);
        window.UsageChart.drawUsageChart($("usage-chart"), model, formatBytes);
    }

    /* Apps and sessions. */

    // Redraws a table only when what it shows changed: a redraw would take away a button
    // under the pointer.
    function unchanged(body, rows) {
        const signature = JSON.stringify(rows);
        if (body.dataset.signature === signature)
            return true;
        body.dataset.signature = signature;
        return false;
    }

    function showApps(apps) {
        const body = $("apps-body");
        updateAppFilter(apps.map(a => a.id));
        if (unchanged(body, apps))
            return;
        body.replaceChildren();
        for (const app of apps) {
            const row = document.createElement("tr");
            row.dataset.app = app.id;
            cell(row, app.id, "id");
            cell(row, app.process, "process");
            cell(row, app.state, "state");
            cell(row, app.frozen === undefined || app.frozen === null ? "—" : app.frozen ? "frozen" : "no", "frozen");
            cell(row, app.sessions + " (" + app.liveSessions + ")", "sessions");
            cell(row, formatBytes(app.baseFootprint + app.sceneFootprint), "memory");
            cell(row, app.attachedPid, "attached");
            cell(row, app.startedPid, "started");
            cell(row, app.hold === "none" ? "—" : app.hold + (app.holdCause ? " (" + app.holdCause + ")" : ""), "hold");
            cell(row, describeBackgroundWork(app), "background-work");
            cell(row, "").append(button("Terminate", "Terminate", app.id, app.process !== "notRunning"));
            body.append(row);
        }
        $("apps-empty").hidden = apps.length > 0;
        markConfirming();
    }

    // Background modes (active ones marked), scheduled tasks, waiting notifications, open wakes;
    // a daemon without background work has none of these fields.
    function describeBackgroundWork(app) {
        const parts = (app.backgroundModes || []).map(m => (app.activeModes || []).includes(m) ? m + " (active)" : m);
        const counts = [[app.scheduledTasks, "task", "tasks"], [app.pendingNotifications, "notification", "notifications"],
                        [app.wakes, "in a wake", "in a wake"]];
        for (const [n, one, many] of counts) {
            if (n > 0)
                parts.push(n + " " + (n === 1 ? one : many));
        }
        return parts.length ? parts.join(", ") : "—";
    }

    function updateAppFilter(ids) {
        const select = $("filter-app");
        const chosen = select.value;
        const known = Array.from(select.options).slice(1).map(o => o.value);
        if (known.join("\n") === ids.join("\n"))
            return;
        select.replaceChildren(select.options[0]);
        for (const id of ids) {
            const option = document.createElement("option");
            option.value = id;
            option.textContent = id;
            select.append(option);
        }
        select.value = ids.includes(chosen) ? chosen : "";
    }

    // ListSessions with "more", stopped once more sessions came than the page shows.
    function listSessions() {
        return new Promise((resolve, reject) => {
            const found = [];
            let more = false;
            const call = page.reader.stream(MANAGER + "ListSessions", page.filter, reply => {
                found.push(...(reply.sessions || []));
                if (found.length > SESSIONS_SHOWN) {
                    more = true;
                    call.close();
                }
            }, error => (error ? reject(error) : resolve({ sessions: found.slice(0, SESSIONS_SHOWN), more })));
        });
    }

    function showSessions(listing) {
        const body = $("sessions-body");
        const n = listing.sessions.length;
        $("sessions-count").textContent = listing.more ? "the first " + n + " shown; choose an app or a state to see others"
            : n + (n === 1 ? " session" : " sessions");
        $("sessions-empty").hidden = n > 0;
        if (unchanged(body, listing.sessions))
            return;
        body.replaceChildren();
        for (const s of listing.sessions) {
            const row = document.createElement("tr");
            row.dataset.session = s.id;
            cell(row, s.id, "id");
            cell(row, s.app, "app");
            cell(row, s.condition, "condition");
            cell(row, s.state, "state");
            cell(row, formatBytes(s.footprint), "footprint");
            cell(row, s.protected ? "yes" : "no", "protected");
            cell(row, formatTime(s.lastActiveAt), "last-active");
            const live = s.condition === "live";
            const actions = cell(row, "");
            actions.append(button("Background", "Background", s.id, live && s.state !== "background"),
                           button("Disconnect", "Disconnect", s.id, live),
                           button("Discard", "Discard", s.id, true));
            body.append(row);
        }
        markConfirming();
    }

    function readFilter() {
        const filter = {};
        const app = $("filter-app").value;
        if (app)
            filter.app = app;
        const [key, value] = $("filter-state").value.split(":");
        if (key && value)
            filter[key] = value;
        page.filter = filter;
    }

    /* Refreshing. */

    function setConnection(error) {
        const badge = $("connection");
        badge.textContent = error ? "cannot reach scened: " + describeError(error) : "connected";
        badge.className = "badge " + (error ? "badge-bad" : "badge-good");
    }

    async function refresh() {
        if (page.refreshing) {
            page.refreshAgain = true;
            return;
        }
        page.refreshing = true;
        try {
            await refreshOnce();
        } finally {
            page.refreshing = false;
            if (page.refreshAgain) {
                page.refreshAgain = false;
                refresh();
            }
        }
    }

    async function refreshOnce() {
        let status, pressure, apps, history;
        try {
            const since = page.historySeq === undefined ? {} : { since: page.historySeq };
            [status, pressure, apps, history] = await Promise.all([
                page.reader.call(MANAGER + "GetStatus"), page.reader.call(MANAGER + "GetPressure"),
                page.reader.call(MANAGER + "ListApps"), page.reader.call(MANAGER + "GetPressureHistory", since)]);
        } catch (error) {
            setConnection(error);
            return;
        }
        setConnection(null);
        page.pressure = pressure.pressure;
        showStatus(status.status, pressure.pressure);
        mergeHistory(history);
        drawChart();
        showApps(apps.apps);
        if (!page.monitorStarted)
            startMonitor(Math.max(1, status.status.nextSeq - EVENTS_KEPT));
        try {
            showSessions(await listSessions());
        } catch (error) {
            $("sessions-body").replaceChildren();
            delete $("sessions-body").dataset.signature;
            $("sessions-count").textContent = "cannot list sessions: " + describeError(error);
        }
    }

    function refreshSoon() {
        if (page.refreshTimer === null)
            page.refreshTimer = window.setTimeout(() => { page.refreshTimer = null; refresh(); }, 300);
    }

    /* Events. */

    function setMonitorState(text, good) {
        const badge = $("monitor-state");
        badge.textContent = text;
        badge.className = "badge " + (good ? "badge-good" : "badge-bad");
    }

    // Follows the events from sequence number since; after the daemon went away, resumes where
    // it stopped (sequence numbers are never reused), or from now if those are no longer kept.
    function startMonitor(since) {
        page.monitorStarted = true;
        setMonitorState("live", true);
        const parameters = since ? { since } : {};
        page.monitor = page.reader.stream(MANAGER + "Monitor", parameters, reply => addEvent(reply.event), error => {
            page.monitor = null;
            if (error instanceof VarlinkError && error.error === MANAGER + "EventsUnavailable")
                return startMonitor(null);
            setMonitorState("stopped: " + describeError(error) + "; retrying", false);
            window.setTimeout(() => startMonitor(page.lastSeq === null ? null : page.lastSeq + 1), 3000);
        });
    }

    function addEvent(event) {
        if (!event || (page.lastSeq !== null && event.seq <= page.lastSeq))
            return;
        page.lastSeq = event.seq;
        page.events.push(event);
        if (page.events.length > EVENTS_KEPT)
            page.events.splice(0, page.events.length - EVENTS_KEPT);
        // A flood of events redraws the list a few times a second, not once per event.
        if (page.eventsTimer === null)
            page.eventsTimer = window.setTimeout(() => { page.eventsTimer = null; showEvents(); }, 200);
        refreshSoon();
    }

    function showEvents() {
        const body = $("events-body");
        body.replaceChildren();
        for (const e of page.events.slice().reverse()) {
            const row = document.createElement("tr");
            row.dataset.seq = e.seq;
            cell(row, e.seq, "seq");
            cell(row, formatTime(e.time), "time");
            cell(row, e.event, "event");
            cell(row, e.app, "app");
            cell(row, e.session, "session");
            cell(row, e.state, "state");
            // The cause, then what the event names: a termination's reason, a wake's task or notification.
            cell(row, [e.cause, e.reason, e.kind, e.identifier || e.notification].filter(Boolean).join(", "), "cause");
            body.append(row);
        }
    }

    /* Actions. */

    function showActionOutcome(text, error) {
        $("action-result").hidden = error;
        $("action-error").hidden = !error;
        $(error ? "action-error" : "action-result").textContent = text;
    }

    async function runAction(label, method, parameters) {
        showActionOutcome(label + " …", false);
        try {
            await page.actor.call(MANAGER + method, parameters);
            showActionOutcome(label + ": done", false);
        } catch (error) {
            // scened's answer is a refusal; anything else (no socket, no answer) a failure.
            const verb = error instanceof VarlinkError ? " refused: " : " failed: ";
            showActionOutcome(label + verb + describeError(error), true);
        }
        refresh();
    }

    // Discard and Terminate cannot be undone: they ask for a second click within a few seconds.
    // The request is kept by action and target, since the tables are redrawn meanwhile.
    function confirmed(action, target) {
        const key = action + " " + target;
        if (page.confirming && page.confirming.key === key && Date.now() < page.confirming.until)
            return true;
        page.confirming = { key, until: Date.now() + CONFIRM_MS };
        markConfirming();
        window.setTimeout(markConfirming, CONFIRM_MS + 50);
        return false;
    }

    function markConfirming() {
        const waiting = page.confirming && Date.now() < page.confirming.until ? page.confirming.key : null;
        for (const b of document.querySelectorAll("button.act-discard, button.act-terminate")) {
            const asking = waiting === b.dataset.action + " " + b.dataset.target;
            b.textContent = asking ? "Really " + b.dataset.action.toLowerCase() + "?" : b.dataset.action;
        }
    }

    function onActionClick(event) {
        const b = event.target.closest("button[data-action]");
        if (!b || b.disabled)
            return;
        const { action, target } = b.dataset;
        if ((action === "Discard" || action === "Terminate") && !confirmed(action, target))
            return;
        page.confirming = null;
        markConfirming();
        const parameters = action === "Terminate" ? { app: target } : { session: target };
        runAction(action + " " + target, action, parameters);
    }

    function onPressureSet(event) {
        event.preventDefault();
        const level = $("pressure-set-level").value;
        const duration = $("pressure-set-duration").value;
        const parameters = duration ? { level, duration: Number(duration) } : { level };
        runAction("Set pressure " + level, "SetPressure", parameters);
    }

    function start() {
        $("socket-path").textContent = socket;
        document.body.addEventListener("click", onActionClick);
        $("pressure-form").addEventListener("submit", onPressureSet);
        $("pressure-clear").addEventListener("click", () => runAction("Clear pressure", "ClearPressure", {}));
        for (const id of ["filter-app", "filter-state"]) {
            $(id).addEventListener("change", () => {
                readFilter();
                refresh();
            });
        }
        refresh();
        window.setInterval(refresh, REFRESH_MS);
    }

    start();
})();
