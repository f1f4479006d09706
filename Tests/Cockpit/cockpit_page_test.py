#!/usr/bin/python3
"""Drives scened's Cockpit page in headless Chromium, one phase per run (CockpitTests runs it).

The Swift test starts scened and cockpit-ws and checks the daemon's side; this script checks
what a person sees: visible text of the page, read from the DOM, never "the page loaded".
Each check prints "ok: ..."; a failed check prints "FAIL: ..." with the page's text and the
browser's console, saves a screenshot and exits 1. Every wait is bounded.

Phases:
  show      the apps, sessions and pressure level the daemon has; Background on a session
            changes its state in the page (the test then checks scened).
  shell     Cockpit's shell lists the page in its menu and shows it, told the socket by the
            shell's address (#/?socket=).
  pressure  Set pressure (critical) from the page: the level and the episode show, in the
            chart too; a screenshot for the README.
  refused   as a user who is not an administrator: the read-only parts show; actions show
            scened's PermissionDenied and the read-only parts keep working.
  vanish    scened is killed while the page is open: the page says it cannot reach scened;
            when it is back (the test restarts it and connects a new session) the page shows
            the new session and its events (the monitor resumed).
  flood     a flood of events while the page is open: the list keeps the last 100, reaches
            the newest, and the page still answers; then more sessions than it lists: it
            shows the first 500 and says so, and the app filter still finds an app's own.
"""

import argparse
import json
import os
import signal
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


class Failure(Exception):
    pass


def open_browser(width, height):
    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=%d,%d" % (width, height), "--lang=en-US"):
        options.add_argument(argument)
    options.binary_location = "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(10)
    return driver


def text_of(driver, css):
    """textContent of the first match ("" if none): what the page wrote, before CSS transforms."""
    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0].get_attribute("textContent").strip() if found else ""


def wait_for(driver, what, condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                print("ok: " + what, flush=True)
                return value
        except WebDriverException as error:
            last_error = error
        time.sleep(0.1)
    raise Failure("not within %.0f s: %s%s" % (timeout, what, "" if last_error is None else " (%s)" % last_error))


def cell(driver, body, key, value, column):
    return text_of(driver, '#%s tr[data-%s="%s"] td.%s' % (body, key, value, column))


def retrying(what, act, attempts=20):
    """Runs act again when the element went stale: the page redraws a table when data changes."""
    for _ in range(attempts):
        try:
            return act()
        except StaleElementReferenceException:
            time.sleep(0.1)
    raise Failure("%s: the element kept going stale" % what)


def click(driver, body, key, value, action):
    def act():
        css = '#%s tr[data-%s="%s"] button[data-action="%s"]' % (body, key, value, action)
        button = driver.find_element(By.CSS_SELECTOR, css)
        if not button.is_enabled():
            raise Failure("%s on %s is disabled" % (action, value))
        button.click()
    retrying("%s on %s" % (action, value), act)


def choose(driver, select_id, value):
    retrying("choose %s in %s" % (value, select_id),
             lambda: Select(driver.find_element(By.ID, select_id)).select_by_value(value))


def events_of(driver, session):
    """The event names the page lists for a session."""
    path = '//tbody[@id="events-body"]/tr[td[@class="session"]="%s"]/td[@class="event"]' % session
    return [e.get_attribute("textContent") for e in driver.find_elements(By.XPATH, path)]


def connected(driver):
    return text_of(driver, "#connection") == "connected"


def shows_daemon_state(driver, args):
    """The apps and sessions the test made, and the daemon's pressure level."""
    wait_for(driver, "the page is connected to scened", lambda: connected(driver))
    for app in args.apps:
        wait_for(driver, "app %s is listed with its process state" % app,
                 lambda: cell(driver, "apps-body", "app", app, "process") in ("running", "suspended", "notRunning"))
    for session in args.sessions:
        wait_for(driver, "session %s is listed" % session,
                 lambda: cell(driver, "sessions-body", "session", session, "condition") in ("live", "archived"))
    wait_for(driver, "the pressure level reads %s" % args.level, lambda: text_of(driver, "#pressure-level") == args.level)
    wait_for(driver, "usage against the budget is shown", lambda: " budget" in text_of(driver, "#usage"))
    wait_for(driver, "the monitor is live", lambda: text_of(driver, "#monitor-state") == "live")


def phase_show(driver, args):
    shows_daemon_state(driver, args)
    target = args.target
    before = cell(driver, "sessions-body", "session", target, "state")
    if before == "background":
        raise Failure("session %s is already in the background" % target)
    # The filters: by app, then by state.
    app = cell(driver, "sessions-body", "session", target, "app")
    choose(driver, "filter-app", app)
    wait_for(driver, "the app filter leaves only %s's sessions" % app,
             lambda: {r.get_attribute("textContent") for r in driver.find_elements(By.CSS_SELECTOR, "#sessions-body td.app")} == {app})
    choose(driver, "filter-app", "")
    click(driver, "sessions-body", "session", target, "Background")
    wait_for(driver, "Background %s is reported done" % target,
             lambda: text_of(driver, "#action-result") == "Background %s: done" % target)
    wait_for(driver, "session %s reads background" % target,
             lambda: cell(driver, "sessions-body", "session", target, "state") == "background")
    wait_for(driver, "the monitor listed didEnterBackground of %s" % target,
             lambda: "didEnterBackground" in events_of(driver, target))
    choose(driver, "filter-state", "state:background")
    wait_for(driver, "the state filter shows only background sessions, %s among them" % target,
             lambda: cell(driver, "sessions-body", "session", target, "state") == "background"
             and {r.get_attribute("textContent") for r in driver.find_elements(By.CSS_SELECTOR, "#sessions-body td.state")} == {"background"})


def phase_shell(driver, args):
    """The page inside Cockpit's shell: listed in its menu, told the socket by the shell's hash."""
    wait_for(driver, "Cockpit's menu lists Scene sessions",
             lambda: "Scene sessions" in [e.get_attribute("textContent").strip() for e in driver.find_elements(By.CSS_SELECTOR, "nav a")])
    frame = wait_for(driver, "the shell shows the page in its frame",
                     lambda: driver.find_elements(By.CSS_SELECTOR, 'iframe[name="cockpit1:localhost/scened"]'))
    driver.switch_to.frame(frame[0])
    shows_daemon_state(driver, args)


def phase_pressure(driver, args):
    shows_daemon_state(driver, args)
    choose(driver, "pressure-set-level", "critical")
    driver.find_element(By.ID, "pressure-set").click()
    wait_for(driver, "Set pressure is reported done", lambda: text_of(driver, "#action-result") == "Set pressure critical: done")
    wait_for(driver, "the level reads critical, forced", lambda: text_of(driver, "#pressure-level") == "critical"
             and text_of(driver, "#pressure-override").startswith("(forced critical"))
    wait_for(driver, "the episode is described", lambda: text_of(driver, "#episode").startswith("#"))
    wait_for(driver, "the chart shades the episode", lambda: text_of(driver, "#usage-chart text.episode-label").endswith("(now)"))
    wait_for(driver, "the chart draws the usage line",
             lambda: len(driver.find_element(By.CSS_SELECTOR, "#usage-chart path.usage").get_attribute("d").split("L")) > 2)
    # A few seconds of the episode, so that the picture shows it as a band.
    time.sleep(5)
    save(driver, args, "cockpit-status.png")


def phase_refused(driver, args):
    shows_daemon_state(driver, args)
    target = args.target
    state = cell(driver, "sessions-body", "session", target, "state")
    click(driver, "sessions-body", "session", target, "Disconnect")
    wait_for(driver, "Disconnect %s shows PermissionDenied" % target,
             lambda: "org.varlink.service.PermissionDenied" in text_of(driver, "#action-error")
             and driver.find_element(By.ID, "action-error").is_displayed())
    driver.find_element(By.ID, "pressure-clear").click()
    wait_for(driver, "Clear pressure shows PermissionDenied",
             lambda: text_of(driver, "#action-error").startswith("Clear pressure refused: org.varlink.service.PermissionDenied"))
    wait_for(driver, "the read-only parts still show after the refusals",
             lambda: connected(driver) and cell(driver, "sessions-body", "session", target, "state") == state
             and text_of(driver, "#pressure-level") == args.level)
    save(driver, args, "cockpit-denied.png")


def phase_vanish(driver, args):
    shows_daemon_state(driver, args)
    os.kill(args.daemon_pid, signal.SIGKILL)
    wait_for(driver, "the page says it cannot reach scened", lambda: text_of(driver, "#connection").startswith("cannot reach scened"))
    wait_for(driver, "the monitor says it stopped", lambda: text_of(driver, "#monitor-state").startswith("stopped"))
    print("down", flush=True)
    session = wait_for_file(args.marker, 30)
    wait_for(driver, "the page is connected again", lambda: connected(driver), timeout=20)
    wait_for(driver, "the new session %s is listed" % session,
             lambda: cell(driver, "sessions-body", "session", session, "condition") == "live")
    wait_for(driver, "the resumed monitor shows the new session's events",
             lambda: "willConnectTo" in events_of(driver, session))


def phase_flood(driver, args):
    shows_daemon_state(driver, args)
    print("loaded", flush=True)
    last = int(wait_for_file(args.marker, 60))
    started = time.monotonic()
    wait_for(driver, "the newest event (%d) heads the list" % last, lambda: text_of(driver, "#events-body tr td.seq") == str(last), timeout=30)
    print("figure: newest event shown %.2f s after the flood ended" % (time.monotonic() - started), flush=True)
    rows = len(driver.find_elements(By.CSS_SELECTOR, "#events-body tr"))
    if rows != 100:
        raise Failure("the event list holds %d rows, not the last 100" % rows)
    print("ok: the list holds the last 100 events", flush=True)
    started = time.monotonic()
    driver.execute_script("return document.getElementById('filter-state').value")
    print("figure: a script round trip after the flood took %.3f s" % (time.monotonic() - started), flush=True)
    wait_for(driver, "the page is still connected", lambda: connected(driver))
    # Then more sessions than the page lists: it shows the first 500 and says so.
    print("events done", flush=True)
    total = int(wait_for_file(args.marker + ".sessions", 120))
    wait_for(driver, "%d sessions: the first 500 shown, and the page says so" % total,
             lambda: text_of(driver, "#sessions-count").startswith("the first 500 shown")
             and len(driver.find_elements(By.CSS_SELECTOR, "#sessions-body tr")) == 500, timeout=30)
    choose(driver, "filter-app", "com.example.notes")
    wait_for(driver, "filtered by app, all of that app's sessions and only them",
             lambda: not text_of(driver, "#sessions-count").startswith("the first")
             and {r.get_attribute("textContent") for r in driver.find_elements(By.CSS_SELECTOR, "#sessions-body td.app")}
             == {"com.example.notes"} and cell(driver, "sessions-body", "session", "s3", "app") == "com.example.notes")


def wait_for_file(path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                content = f.read()
            if content.endswith("\n"):
                return content.strip()
        except FileNotFoundError:
            pass
        time.sleep(0.1)
    raise Failure("the test did not write %s within %d s" % (path, timeout))


def save(driver, args, name):
    path = os.path.join(args.screenshots, name)
    driver.save_screenshot(path)
    print("screenshot: " + path, flush=True)


PHASES = {"show": phase_show, "shell": phase_shell, "pressure": phase_pressure, "refused": phase_refused, "vanish": phase_vanish,
          "flood": phase_flood}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("phase", choices=sorted(PHASES))
    parser.add_argument("--url", required=True)
    parser.add_argument("--apps", default="")
    parser.add_argument("--sessions", default="")
    parser.add_argument("--level", default="normal")
    parser.add_argument("--target", default="")
    parser.add_argument("--daemon-pid", type=int, default=0)
    parser.add_argument("--marker", default="")
    parser.add_argument("--screenshots", required=True)
    args = parser.parse_args()
    args.apps = [a for a in args.apps.split(",") if a]
    args.sessions = [s for s in args.sessions.split(",") if s]
    driver = open_browser(1280, 1180)
    try:
        driver.get(args.url)
        PHASES[args.phase](driver, args)
        print("phase %s: passed" % args.phase, flush=True)
        return 0
    except (Failure, WebDriverException) as error:
        print("FAIL: %s" % error, flush=True)
        try:
            print("page text:\n" + driver.find_element(By.TAG_NAME, "body").text, flush=True)
            for entry in driver.get_log("browser"):
                print("console: " + json.dumps(entry), flush=True)
            save(driver, args, "failed-%s.png" % args.phase)
        except WebDriverException as second:
            print("(could not read the page: %s)" % second, flush=True)
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
