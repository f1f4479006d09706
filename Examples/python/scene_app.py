#!/usr/bin/env python3
"""A scened app in Python, on the PyPI `varlink` package (io.scened.App).

It attaches as its app (Attach with more: one reply per callback, in commit order), prints
every callback, keeps a little state per scene (how often it came to the foreground and a
note), answers didEnterBackground with that state as its restoration data (what UIKit asks
stateRestorationActivity(for:) for), answers willTerminate with the state of every scene still
connected (restorations, by session), and restores the state from willConnectTo's restoration.
Before a resign or background callback it prints why it came (the event's cause: request,
lock, interruption, shutdown, ...; UIKit does not tell, scened does).

Background work (BGTaskScheduler's contract, R34): with --refresh SECONDS it schedules the
refresh task py.refresh that far ahead (ScheduleBackgroundTask); when scened runs it
(performBackgroundTask, the app thawed for it if it was suspended) it counts the refresh in every
connected scene's state, schedules the next one and completes it (CompleteBackgroundTask). A
notification (scenectl notify APP '{"text": "..."}') arrives as didReceiveNotification: its text
becomes the note of every connected scene, and the answer (Acknowledge) lets scened suspend the
app again. A task it does not know, or one whose budget ends (backgroundTaskWillExpire), is
completed unsuccessfully.

URLs and activities (io.scened.Manager Open, `scenectl open URL`, for an app whose apps.d file
has `[App] URLSchemes=`): a scene opened with a URL (willConnectTo's urlContexts) or handed one
while connected (openURLContexts) keeps the last URL as its note, saved at once (SaveState);
an activity (userActivities, continueUserActivity) does the same with its title or type.

On start it brings back its first archived session if it has one (the one a previous run left
when it quit or was killed), else asks for a new scene. Ctrl-C (or SIGTERM) detaches. When
scened stops (its scenes were sent to the background and answered first) the app keeps running
and attaches again once scened is back, from the event after the last one it handled.

    python3 Examples/python/scene_app.py [--socket PATH] [--app ID] [--note TEXT] [--no-scene]
                                         [--refresh SECONDS]

The socket is found like scenectl finds it: --socket, $SCENED_SOCKET, else the first that
exists of $XDG_RUNTIME_DIR/scened/io.scened.Manager, /run/scened/io.scened.Manager and
/tmp/scened-UID/io.scened.Manager. Output is one line per callback, e.g.

    attached com.example.pynotes pid 4242 next event 1
    1 didFinishLaunching
    2 configurationForConnecting s1 windowApplication
    3 willConnectTo s1 new scene
    ...
    cause of event 6: request
    6 willResignActive s1
    cause of event 7: request
    7 didEnterBackground s1 answered, saved {"foregrounds": 1, "note": "hello"}
    ...
    11 willTerminate answered, saved {"s1": {"foregrounds": 1, "note": "hello"}}
    13 willConnectTo s1 restored {"foregrounds": 1, "note": "hello"}
    ...
    scheduled py.refresh in 60 s
    21 performBackgroundTask py.refresh refresh completed, refreshes 1
    24 didReceiveNotification n3 {"text": "hi"} answered
    27 willConnectTo s2 new scene opened with pynotes:draft?text=hi
    31 openURLContexts s2 pynotes:other from org.example.mail
"""

import argparse
import json
import os
import signal
import sys
import time

import varlink

INTERFACE = "io.scened.App"
REFRESH = "py.refresh"


def socket_path(given):
    if given:
        return given
    if os.environ.get("SCENED_SOCKET"):
        return os.environ["SCENED_SOCKET"]
    candidates = []
    if os.environ.get("XDG_RUNTIME_DIR"):
        candidates.append(os.path.join(os.environ["XDG_RUNTIME_DIR"], "scened", "io.scened.Manager"))
    candidates += ["/run/scened/io.scened.Manager", "/tmp/scened-%d/io.scened.Manager" % os.getuid()]
    for path in candidates:
        if os.path.exists(path):
            return path
    sys.exit("scene_app: no scened socket at %s; is scened running? (--socket names another)"
             % ", ".join(candidates))


def say(text):
    print(text, flush=True)


class SceneApp:
    def __init__(self, address, app, note, refresh=None):
        self.address = address
        self.app = app
        self.note = note
        # Seconds between background refreshes (py.refresh), or None for none.
        self.refresh = refresh
        self.refreshes = 0
        self.connect()
        # Per session: the state this app would lose if its scene went away.
        self.state = {}
        # The sessions with a scene connected now.
        self.connected = set()
        # Where a new attach resumes: the event after the last one handled.
        self.next_seq = None

    def connect(self):
        client = varlink.Client(address=self.address)
        # A Varlink connection serves one streaming call at a time: Attach holds one, the
        # answers and requests go over a second.
        self.stream = client.open(INTERFACE)
        self.calls = client.open(INTERFACE)
        self.manager = client.open("io.scened.Manager")

    def run(self, want_scene):
        launched = False
        while True:
            try:
                if self.attach_and_handle(want_scene and not launched):
                    return
                launched = True
            except (BrokenPipeError, ConnectionError) as error:
                launched = launched or self.next_seq is not None
                say("connection to scened lost (%s): attaching again when it is back" % error)
                self.reconnect()

    def attach_and_handle(self, want_scene):
        """One Attach call, handled until it ends; True once the app detached."""
        if self.next_seq is None:
            replies = self.stream.Attach(app=self.app, _more=True)
        else:
            # The same process again (scened restarted): the app is not relaunched.
            replies = self.stream.Attach(app=self.app, since=self.next_seq, _more=True)
        attached = next(replies)["attached"]
        say("%s %s pid %d next event %d" % ("attached" if self.next_seq is None else "reattached",
                                            attached["app"], attached["pid"], attached["nextSeq"]))
        for reply in replies:
            event = reply.get("event")
            if event is None:
                # A reclaim notice: not answered here; its deadline decides.
                continue
            self.handle(event)
            self.next_seq = event["seq"] + 1
            if event["event"] == "didFinishLaunching" and self.refresh is not None:
                self.schedule_refresh()
            if event["event"] == "didFinishLaunching" and want_scene:
                want_scene = False
                self.open_scene()
            if event["event"] == "willTerminate":
                self.calls.Detach(app=self.app)
                say("detached")
                return True
        return True

    def reconnect(self, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                self.connect()
                return
            except (OSError, varlink.VarlinkError):
                continue
        sys.exit("scene_app: scened did not come back within %d s" % seconds)

    def acknowledge(self, seq, **state):
        """Answers a bounded callback; False if scened no longer waits for the answer."""
        try:
            self.calls.Acknowledge(app=self.app, seq=seq, **state)
            return True
        except varlink.VarlinkError as error:
            if error.error() not in (INTERFACE + ".NotAwaiting", INTERFACE + ".DeadlinePassed"):
                raise
            say("answer to event %d refused: %s" % (seq, error.error()))
            return False

    def schedule_refresh(self):
        """BGTaskScheduler.submit: py.refresh, self.refresh seconds from now (replacing any)."""
        begin = int((time.time() + self.refresh) * 1_000_000)
        self.calls.ScheduleBackgroundTask(app=self.app, identifier=REFRESH, kind="refresh", earliestBegin=begin)
        say("scheduled %s in %g s" % (REFRESH, self.refresh))

    def complete(self, identifier, success):
        """BGTask.setTaskCompleted; False if scened no longer waits for it (it expired)."""
        try:
            self.calls.CompleteBackgroundTask(app=self.app, identifier=identifier, success=success)
            return True
        except varlink.VarlinkError as error:
            say("completing %s refused: %s" % (identifier, error.error()))
            return False

    def perform(self, e):
        """performBackgroundTask: py.refresh counts in every connected scene, then the next one
        is scheduled and this one completed; any other task is completed unsuccessfully."""
        identifier = e.get("identifier") or ""
        if identifier != REFRESH or self.refresh is None:
            self.complete(identifier, False)
            return " unknown, completed unsuccessfully"
        self.refreshes += 1
        for session in sorted(self.connected):
            self.state.setdefault(session, {"foregrounds": 0, "note": self.note})["refreshes"] = self.refreshes
            self.save(session)
        self.schedule_refresh()
        done = self.complete(identifier, True)
        return " %s %s, refreshes %d" % (e.get("kind") or "", "completed" if done else "not completed", self.refreshes)

    def notified(self, e):
        """didReceiveNotification: the text becomes every connected scene's note; answered."""
        payload = e.get("payload") or {}
        if "text" in payload:
            for session in sorted(self.connected):
                self.state.setdefault(session, {"foregrounds": 0, "note": self.note})["note"] = str(payload["text"])
                self.save(session)
        line = " %s %s" % (e.get("notification") or "", json.dumps(payload, sort_keys=True))
        return line + (" answered" if self.acknowledge(e["seq"]) else "")

    def save(self, session):
        """The scene's state saved now (SaveState), not only in the next didEnterBackground answer."""
        self.calls.SaveState(app=self.app, session=session, restoration={"json": self.state[session]})

    def open_scene(self):
        """The archived session a previous process left, else a new scene."""
        archived = self.manager.ListSessions(app=self.app, condition="archived")["sessions"]
        if archived:
            session = archived[0]["id"]
            self.calls.RequestSceneSessionActivation(app=self.app, session=session)
            say("requested the activation of %s" % session)
        else:
            session = self.calls.RequestSceneSessionActivation(app=self.app, userInfo={"from": "scene_app.py"})["session"]
            say("requested a new scene: %s" % session)

    def opened(self, session, e):
        """The URLs and activities an event hands the scene: the last becomes its note, saved.
        The text describing them, for the event's line."""
        parts, note = [], None
        for context in e.get("urlContexts") or []:
            note = context["url"]
            source = context.get("sourceApplication")
            parts.append(note + (" from " + source if source else ""))
        for activity in e.get("userActivities") or []:
            note = activity.get("title") or activity["activityType"]
            parts.append("activity " + activity["activityType"])
        if note is not None and session:
            self.state.setdefault(session, {"foregrounds": 0, "note": self.note})["note"] = note
            self.save(session)
        return ", ".join(parts)

    def handle(self, e):
        name, seq, session = e["event"], e["seq"], e.get("session")
        if name in ("willResignActive", "didEnterBackground"):
            # A line of its own, so that each callback's line keeps its shape.
            say("cause of event %d: %s" % (seq, e.get("cause") or "-"))
        line = "%d %s" % (seq, name)
        if session:
            line += " " + session
        if name == "configurationForConnecting":
            line += " " + (e.get("role") or "")
        elif name == "willConnectTo":
            self.connected.add(session)
            data = (e.get("restoration") or {}).get("json")
            if data is not None:
                # scene(_:willConnectTo:options:) with the session's stateRestorationActivity.
                self.state[session] = dict(data)
                line += " restored " + json.dumps(data, sort_keys=True)
            else:
                self.state[session] = {"foregrounds": 0, "note": self.note}
                line += " new scene"
            opened = self.opened(session, e)
            if opened:
                line += " opened with " + opened
        elif name in ("openURLContexts", "continueUserActivity"):
            # scene(_:openURLContexts:), scene(_:continue:): a connected scene gets more.
            line += " " + self.opened(session, e)
        elif name == "willEnterForeground":
            s = self.state.setdefault(session, {"foregrounds": 0, "note": self.note})
            s["foregrounds"] += 1
        elif name == "didEnterBackground":
            # Answer before the deadline, with the state to restore the scene from.
            s = self.state.get(session, {"foregrounds": 0, "note": self.note})
            if self.acknowledge(seq, restoration={"json": s}):
                line += " answered, saved " + json.dumps(s, sort_keys=True)
        elif name == "willTerminate":
            # On the way down, every connected scene's state, saved before the answer returns.
            saved = {s: {"json": self.state[s]} for s in sorted(self.connected) if s in self.state}
            if self.acknowledge(seq, restorations=saved):
                line += " answered, saved " + json.dumps({s: d["json"] for s, d in saved.items()}, sort_keys=True)
        elif name == "didDisconnect":
            self.connected.discard(session)
        elif name == "didDiscardSceneSessions":
            for gone in e.get("sessions") or []:
                self.state.pop(gone, None)
            line += " " + ",".join(e.get("sessions") or [])
        elif name == "performBackgroundTask":
            line += " " + (e.get("identifier") or "") + self.perform(e)
        elif name == "didReceiveNotification":
            line += self.notified(e)
        elif name == "backgroundTaskWillExpire" and e.get("identifier"):
            # A scheduled task's budget ended (a token's task, from BeginBackgroundTask, has "task").
            line += " " + e["identifier"]
            if self.complete(e["identifier"], False):
                line += " completed unsuccessfully"
        elif name == "terminated":
            self.connected.clear()
            line += " " + (e.get("reason") or "")
        say(line)


def main():
    parser = argparse.ArgumentParser(description="A scened app in Python (io.scened.App over the varlink package).")
    parser.add_argument("--socket", help="the daemon's socket")
    parser.add_argument("--app", default="com.example.pynotes", help="the app to attach as")
    parser.add_argument("--note", default="hello", help="what a new scene keeps in its state")
    parser.add_argument("--no-scene", action="store_true", help="attach only; ask for no scene")
    parser.add_argument("--refresh", type=float, metavar="SECONDS",
                        help="schedule the background refresh py.refresh every SECONDS")
    args = parser.parse_args()

    def stop(signo, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)

    if args.refresh is not None and args.refresh < 0:
        parser.error("--refresh needs a number of seconds, 0 or more")
    app = SceneApp("unix:" + socket_path(args.socket), args.app, args.note, args.refresh)
    try:
        app.run(want_scene=not args.no_scene)
    except KeyboardInterrupt:
        # Quitting: the scenes go, the sessions stay archived with what they saved. A second
        # signal must not cut the Detach short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            app.calls.Detach(app=args.app)
            say("detached")
        except (varlink.VarlinkError, OSError) as error:
            say("detach failed: %s" % error)
    except varlink.VarlinkError as error:
        # io.scened.App.Terminated: the daemon took this process for hung.
        sys.exit("scene_app: %s %s" % (error.error(), error.parameters()))


if __name__ == "__main__":
    main()
