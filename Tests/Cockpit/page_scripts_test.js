// The Cockpit page's pure parts under node, without a browser (CockpitScriptTests runs it):
// varlink.js against a fake cockpit.channel and a fake clock (frames split anywhere, several
// in one chunk, garbage, a peer that never answers, a stream's end), and chart.js's model
// (usage visible whatever its share of the budget, the episode's extent).
// Prints "ok: ..." per check; the first failure throws, and node exits non-zero.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const pageDir = process.argv[2];
const timers = [];
let now = 0;
const sandbox = {
    TextEncoder, TextDecoder, Uint8Array, JSON, Math, Array, Object, Promise, Error, String, Number, Infinity,
    setTimeout: (fn, ms) => { timers.push({ at: now + ms, fn }); return timers.length; },
    clearTimeout: id => { if (timers[id - 1]) timers[id - 1].fn = null; },
    cockpit: {
        channel: options => new FakeChannel(options),
        message: info => info.problem,
    },
};
sandbox.window = sandbox;
vm.createContext(sandbox);
for (const file of ["varlink.js", "chart.js"])
    vm.runInContext(fs.readFileSync(path.join(pageDir, file), "utf8"), sandbox, { filename: file });
const { VarlinkClient, VarlinkError, ChannelError, FrameReader } = sandbox.Varlink;
const { usageChartModel } = sandbox.UsageChart;

const channels = [];
class FakeChannel {
    constructor(options) {
        this.options = options;
        this.valid = true;
        this.sent = [];
        this.listeners = { message: [], close: [] };
        channels.push(this);
    }
    addEventListener(name, fn) { this.listeners[name].push(fn); }
    send(data) { this.sent.push(new TextDecoder().decode(data)); }
    close(problem) {
        if (!this.valid) return;
        this.valid = false;
        this.closedWith = problem;
        for (const fn of this.listeners.close) fn({}, problem ? { problem } : {});
    }
    // What the bridge would hand the page: a chunk of bytes from the socket.
    deliver(bytes) { for (const fn of this.listeners.message) fn({}, bytes); }
    peerCloses(info) {
        this.valid = false;
        for (const fn of this.listeners.close) fn({}, info || {});
    }
}

const encode = text => new TextEncoder().encode(text);
const frame = object => encode(JSON.stringify(object) + "\0");
// Values from the page's context compared as data (its arrays are another realm's).
const plain = value => JSON.parse(JSON.stringify(value));
const settle = () => new Promise(resolve => setImmediate(resolve));
function advance(ms) {
    now += ms;
    for (const t of timers.slice()) if (t.fn && t.at <= now) { const fn = t.fn; t.fn = null; fn(); }
}
function ok(what) { console.log("ok: " + what); }

async function framing() {
    const reader = new FrameReader();
    const bytes = frame({ parameters: { text: "zürich → 東京" } });
    // Every split point, multi-byte characters included.
    for (let cut = 0; cut <= bytes.length; cut++) {
        const first = reader.push(bytes.subarray(0, cut));
        const second = reader.push(bytes.subarray(cut));
        const all = first.concat(second);
        assert.equal(all.length, 1, "split at " + cut);
        assert.equal(all[0].parameters.text, "zürich → 東京");
    }
    ok("a message split at any byte, inside a character too, is read whole once");
    const three = new Uint8Array([...frame({ a: 1 }), ...frame({ b: 2 }), ...frame({ c: 3 })]);
    assert.deepEqual(plain(reader.push(three).map(m => Object.keys(m)[0])), ["a", "b", "c"]);
    ok("three messages in one chunk are three messages, in order");
    assert.throws(() => new FrameReader().push(encode("not json\0")));
    assert.throws(() => new FrameReader().push(encode("[1,2]\0")), ChannelError);
    ok("garbage and a JSON value that is not an object are refused");
    const big = new FrameReader();
    assert.throws(() => { for (let i = 0; i < 17; i++) big.push(new Uint8Array(1024 * 1024).fill(32)); }, /larger than/);
    ok("a message that grows past 16 MiB is refused, not buffered");
}

async function calls() {
    channels.length = 0;
    const client = new VarlinkClient("/run/test.sock", { superuser: "try" });
    const first = client.call("io.scened.Manager.GetStatus");
    const second = client.call("io.scened.Manager.Background", { session: "s1" });
    assert.equal(channels.length, 1, "calls share one channel");
    const channel = channels[0];
    assert.equal(channel.options.unix, "/run/test.sock");
    assert.equal(channel.options.payload, "stream");
    assert.equal(channel.options.binary, true);
    assert.equal(channel.options.superuser, "try");
    assert.deepEqual(plain(JSON.parse(channel.sent[1].slice(0, -1))), { method: "io.scened.Manager.Background", parameters: { session: "s1" } });
    assert.ok(channel.sent.every(s => s.endsWith("\0")), "each message ends with NUL");
    ok("calls go out as NUL-terminated JSON on one stream channel to the socket");
    const both = new Uint8Array([...frame({ parameters: { status: { pid: 7 } } }),
        ...frame({ error: "org.varlink.service.PermissionDenied", parameters: { message: "no" } })]);
    channel.deliver(both.subarray(0, 5));
    channel.deliver(both.subarray(5));
    assert.equal((await first).status.pid, 7);
    await assert.rejects(second, e => e instanceof VarlinkError && e.error === "org.varlink.service.PermissionDenied"
        && e.parameters.message === "no");
    ok("replies settle the calls in order; an error reply rejects with its name and message");

    const third = client.call("io.scened.Manager.GetStatus");
    channel.deliver(encode("{garbage\0"));
    await assert.rejects(third, e => e instanceof ChannelError && e.problem === "protocol-error");
    assert.equal(channel.valid, false);
    ok("garbage from the peer fails the waiting call and closes the channel");

    const fourth = client.call("io.scened.Manager.GetStatus");
    assert.equal(channels.length, 2, "the next call opens a new channel");
    channels[1].deliver(frame({ parameters: { fine: true } }));
    assert.equal((await fourth).fine, true);
    ok("after a broken channel the next call opens a fresh one");

    const hung = client.call("io.scened.Manager.GetStatus");
    const behind = client.call("io.scened.Manager.ListApps");
    advance(15001);
    await assert.rejects(hung, e => e.problem === "timeout");
    await assert.rejects(behind, e => e.problem === "timeout");
    assert.equal(channels[1].valid, false);
    ok("a peer that never answers: every waiting call fails after 15 s, the channel is closed");

    const gone = client.call("io.scened.Manager.GetStatus");
    channels[2].peerCloses({ problem: "not-found" });
    await assert.rejects(gone, e => e instanceof ChannelError && e.problem === "not-found");
    const unsolicited = new VarlinkClient("/x");
    const fine = unsolicited.call("m");
    channels[3].deliver(new Uint8Array([...frame({ parameters: {} }), ...frame({ parameters: { extra: 1 } })]));
    await fine;
    assert.equal(channels[3].valid, false);
    ok("the peer going away fails the call; a reply nobody asked for closes the channel");
}

async function streams() {
    channels.length = 0;
    const client = new VarlinkClient("/run/test.sock");
    const replies = [];
    let ended = "not yet";
    client.stream("io.scened.Manager.ListSessions", { app: "a" }, (p, continues) => replies.push([p.n, continues]),
        error => { ended = error; });
    const channel = channels[0];
    assert.deepEqual(JSON.parse(channel.sent[0].slice(0, -1)).more, true);
    const all = new Uint8Array([...frame({ parameters: { n: 1 }, continues: true }), ...frame({ parameters: { n: 2 }, continues: true }),
        ...frame({ parameters: { n: 3 } }), ...frame({ parameters: { n: 4 } })]);
    for (let i = 0; i < all.length; i += 7) channel.deliver(all.subarray(i, i + 7));
    assert.deepEqual(plain(replies), [[1, true], [2, true], [3, false]]);
    assert.equal(ended, null);
    assert.equal(channel.valid, false);
    ok("a call with more: each reply in order, the last one ends it, the channel is closed, nothing after");

    let closedEnd = "not yet";
    const monitor = client.stream("io.scened.Manager.Monitor", {}, () => { monitor.close(); replies.push("after close"); },
        error => { closedEnd = error; });
    replies.length = 0;
    channels[1].deliver(new Uint8Array([...frame({ parameters: { n: 1 }, continues: true }), ...frame({ parameters: { n: 2 }, continues: true })]));
    assert.deepEqual(plain(replies), ["after close"]);
    assert.equal(closedEnd, null);
    ok("close() from inside a reply stops the stream: no reply after it");

    let failed = null;
    client.stream("io.scened.Manager.Monitor", {}, () => {}, error => { failed = error; });
    channels[2].deliver(frame({ error: "io.scened.Manager.EventsUnavailable", parameters: { since: 1, oldest: 5 } }));
    assert.equal(failed.error, "io.scened.Manager.EventsUnavailable");
    let vanished = null;
    client.stream("io.scened.Manager.Monitor", {}, () => {}, error => { vanished = error; });
    channels[3].peerCloses({});
    assert.ok(vanished instanceof ChannelError && /closed the connection/.test(vanished.message));
    ok("a stream ends once with the error reply, or with the peer's going away");
}

function chart() {
    const GiB = 1024 ** 3;
    const MiB = 1024 ** 2;
    const pressure = { usage: 40 * MiB, budget: 8 * GiB, lowWatermark: 6.4 * GiB, highWatermark: 7.2 * GiB,
        criticalWatermark: 7.8 * GiB, episode: null, lastEpisode: null };
    const t0 = 1e15;
    const samples = [{ time: t0, usage: 10 * MiB }, { time: t0 + 10e6, usage: 40 * MiB }];
    let model = usageChartModel(samples, pressure, t0 + 20e6, 60e6);
    const ys = model.points.map(p => p[1]);
    const plotHeight = model.height - model.plot.top - model.plot.bottom;
    assert.ok(Math.max(...ys) - Math.min(...ys) > plotHeight / 3, "the usage line rises visibly: " + ys);
    assert.equal(model.lines.length, 0);
    assert.deepEqual(plain(model.offScale.map(m => m.name)), ["budget", "critical", "high", "low"]);
    ok("40 MiB against an 8 GiB budget: the line fills a third of the height, the budget is named off scale");

    const near = Object.assign({}, pressure, { usage: 7 * GiB, episode: { number: 3, startedAt: t0 + 5e6 } });
    model = usageChartModel([{ time: t0, usage: 6 * GiB }, { time: t0 + 5e6, usage: 7 * GiB }], near, t0 + 20e6, 60e6);
    assert.deepEqual(plain(model.lines.map(m => m.name)), ["budget", "critical", "high", "low"]);
    assert.equal(model.offScale.length, 0);
    const plotRight = model.width - model.plot.right;
    assert.ok(Math.abs(model.episode.x + model.episode.width - plotRight) < 0.5, "a current episode runs to now");
    assert.match(model.episode.label, /episode 3 \(now\)/);
    ok("usage near the budget: every watermark drawn; the current episode shaded from its start to now");

    const ended = Object.assign({}, pressure, { lastEpisode: { number: 2, startedAt: t0 - 120e6, endedAt: t0 + 10e6 } });
    model = usageChartModel(samples, ended, t0 + 20e6, 60e6);
    assert.ok(Math.abs(model.episode.x - model.plot.left) < 0.5, "an episode begun before the window starts at its edge");
    assert.ok(model.episode.x + model.episode.width < plotRight - 50, "an ended episode stops where it ended");
    model = usageChartModel(samples, Object.assign({}, pressure, { lastEpisode: { number: 1, startedAt: 0, endedAt: t0 - 100e6 } }),
        t0 + 20e6, 60e6);
    assert.equal(model.episode, null);
    ok("the last episode is shaded only where it falls inside the window");
}

(async () => {
    await framing();
    await calls();
    await streams();
    await settle();
    chart();
    console.log("page scripts: passed");
})().catch(error => {
    console.log("FAIL: " + (error && error.stack || error));
    process.exit(1);
});
