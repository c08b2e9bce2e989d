"""Browser benchmark: the app as a user's Chromium sees it, timed inside the page.

The targets (issue #9): the Document screen fully drawn (from the click to the last chart and
the page image painted) in at most 2 s for 400 pages and 3 s for 3,000 pages on this 2-core
machine; a page turn in at most 300 ms; the first open on a fresh server usable in at most 3 s.

Real Chromium (Debian's, through Playwright) against a real ``streamlit run app.py`` with the
offline engine (no key). Every time is taken in the page with ``performance.now()``: the start
by a capture-phase listener on the user's click or key (or the navigation itself, for the
first open), the end by a ``requestAnimationFrame`` loop at the first frame where everything
the measure names is on the page, plus one frame so that it is painted. Measured:

- first open: a fresh server per round; from navigation start until Run is visible and
  enabled and the script run is over;
- Document screen: upload the document on Ask, run Baseline and R&R, then click Document in
  the sidebar until both charts have drawn their marks, the page image has loaded, the prompt
  is shown and the run is over; the first visit (the browser loads those elements' code then)
  and then again, via Ask, ``--rounds`` times;
- page turn: the Page input's + button, until the new image is loaded and painted;
- slider: a sidebar slider moved one step with the keyboard, until the rerun is over and
  painted: wall time as the browser sees it (the server's share: ``bench_app.py``). Its floor
  is the same move on a trivial app (a slider and a line of text), in the same browser.

Prints one table (median, spread, goal, median/goal) and where the time of a Document visit
goes. Screenshots of the drawn Document screen go to ``artifacts/bench/``. Asserts nothing
about time.

    .venv/bin/python benchmarks/bench_browser.py [--rounds 3] [--sizes 400,3000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from longdoc import QUESTION, pdf_path  # noqa: E402

from tests import browser_kit as kit  # noqa: E402

ARTIFACTS = ROOT / "artifacts" / "bench"
DOCUMENTS = kit.SHARED / "data" / "documents"
FIRST_OPEN_GOAL_MS = 3_000.0
DOCUMENT_GOAL_MS = {400: 2_000.0, 3000: 3_000.0}
PAGE_TURN_GOAL_MS = 300.0
LONG_STRIP = 300  # pages/document.py: above this many pages the strip is an outline, not bars
# Waits are for conditions; these only bound them. Reading 3,000 pages on a busy 2-core machine
# takes minutes.
LOAD_LIMIT_MS = 900_000
DRAW_LIMIT_MS = 120_000

FLOOR_APP = """import streamlit as st

value = st.slider("Floor", 0, 100, 50, key="floor")
st.write(f"A trivial app: what any rerun costs in this browser and server. Slider at {value}.")
"""

# Installed in every document of the context before the app's own scripts. ``arm`` listens
# (capture phase, so before the app) for the user's click or key, takes performance.now(), then
# polls once a frame until every named condition holds, waits one frame more (painted), and
# resolves ``window.__rr.result`` with the times, the script-state changes it saw, the long
# tasks and the resources fetched in between.
PROBE = r"""
(() => {
  if (window.__rr) return;
  const q = (s) => document.querySelector(s);
  const qa = (s) => [...document.querySelectorAll(s)];
  const longTasks = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) longTasks.push([e.startTime, e.duration]);
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) { /* no long-task timing in this browser */ }

  // The websocket's traffic, timed as the page handles it: the rerun request going out, the
  // server's messages coming in (a listener added in the constructor runs before the app's).
  const sent = [];
  const received = [];
  const size = (d) => d?.byteLength ?? d?.size ?? d?.length ?? 0;
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    sent.push([performance.now(), size(data)]);
    return send.call(this, data);
  };
  const Socket = window.WebSocket;
  window.WebSocket = class extends Socket {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => received.push([performance.now(), size(e.data)]));
    }
  };

  const app = () => q('[data-testid="stApp"]');
  const scriptState = () => app()?.getAttribute('data-test-script-state');
  const shown = (el) => {
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  };
  // The run is over, its elements are drawn (none waits for its code) and none is stale.
  const idle = () => ({
    notRunning: scriptState() === 'notRunning',
    statusHidden: !shown(q('[data-testid="stStatusWidget"]')),
    noSkeleton: !q('[data-testid="stMain"] [data-testid="stSkeleton"]'),
    noStale: !q('[data-testid="stMain"] [data-stale="true"]'),
  });
  const image = () => q('[data-testid="stMain"] [data-testid="stImage"] img');
  const loaded = (img) => !!img && img.complete && img.naturalWidth > 0;

  const checks = {
    ask: () => () => {
      const run = q('[data-testid="stMain"] .st-key-run button');
      return { run: shown(run) && !run.disabled && run.innerText.includes('Run'), ...idle() };
    },
    document: ({ pages, longStrip }) => () => {
      const heading = qa('[data-testid="stMain"] h1').some((h) => h.innerText.includes('What the model saw'));
      // One bar a page, or (a long document) the pages' outline and the retrieved pages' markers.
      const bars = qa('.st-key-page_strip .js-plotly-plot .barlayer .point path').length;
      const outline = qa('.st-key-page_strip .js-plotly-plot .scatterlayer .js-fill')
        .some((p) => (p.getAttribute('d') || '').length > 1);
      const markers = qa('.st-key-page_strip .js-plotly-plot .scatterlayer .point').length;
      const lines = qa('.st-key-distance_chart .js-plotly-plot .scatterlayer .js-line')
        .filter((p) => (p.getAttribute('d') || '').length > 1).length;
      const code = q('[data-testid="stMain"] .st-key-prompt_box [data-testid="stText"]');
      return {
        heading,
        strip: pages > longStrip ? outline && markers > 0 : bars === pages,
        distanceLines: lines > 0,
        pageImage: loaded(image()),
        prompt: !!code && code.innerText.trim().length > 0,
        ...idle(),
      };
    },
    pageTurn: ({ src }) => () => {
      const img = image();
      return { newImage: !!img && img.src !== src && loaded(img), ...idle() };
    },
    slider: () => () => ({ slider: shown(q('[data-testid="stSlider"]')), ...idle() }),
    // The trivial app's run is too short to show: React may never draw 'running'. Its output
    // names the slider's value instead.
    floor: ({ value }) => () => ({
      output: (q('[data-testid="stMain"]')?.innerText || '').includes(`Slider at ${value}.`),
      ...idle(),
    }),
    rerun: (_, seen) => () => ({ ranAgain: seen.some(([, s]) => s === 'running'), ...idle() }),
  };

  const failing = (named) => Object.entries(named).filter(([, ok]) => !ok).map(([k]) => k);

  // First frame where check() holds everything, then one frame more: resolves performance.now().
  const until = (check, limitMs, onFrame) => new Promise((resolve, reject) => {
    const start = performance.now();
    const tick = () => {
      if (onFrame) onFrame();
      const missing = failing(check());
      if (missing.length === 0) {
        requestAnimationFrame(() => resolve(performance.now()));
      } else if (performance.now() - start > limitMs) {
        reject(new Error(`not there after ${limitMs} ms: ${missing.join(', ')}`));
      } else {
        requestAnimationFrame(tick);
      }
    };
    requestAnimationFrame(tick);
  });

  // Every change of the script state, with its time (a MutationObserver sees each one, even
  // a run shorter than a frame).
  const watchState = (seen) => {
    let observer = null;
    const attach = () => {
      const el = app();
      if (!el || observer) return;
      observer = new MutationObserver(() => seen.push([performance.now(), scriptState()]));
      observer.observe(el, { attributes: true, attributeFilter: ['data-test-script-state'] });
      seen.push([performance.now(), scriptState()]);
    };
    attach();
    return { attach, stop: () => observer && observer.disconnect() };
  };

  const within = (t0, t1) => ({
    longTasks: longTasks.filter(([s]) => s >= t0 && s <= t1),
    sent: sent.filter(([t]) => t >= t0 && t <= t1),
    received: received.filter(([t]) => t >= t0 && t <= t1),
    resources: performance.getEntriesByType('resource')
      .filter((e) => e.startTime >= t0 && e.startTime <= t1)
      .map((e) => ({ name: e.name, kind: e.initiatorType, start: e.startTime, end: e.responseEnd })),
  });

  window.__rr = {
    arm(name, eventType, limitMs, args) {
      const seen = [];
      const watcher = watchState(seen);
      const check = checks[name](args || {}, seen);
      window.__rr.result = new Promise((resolve, reject) => {
        const onEvent = () => {
          window.removeEventListener(eventType, onEvent, true);
          const t0 = performance.now();
          performance.mark('rr-start');  // the marks bound the window in a Chrome trace
          until(check, limitMs).then((t1) => {
            performance.mark('rr-end');
            watcher.stop();
            resolve({ t0, t1, states: seen.filter(([t]) => t >= t0), ...within(t0, t1) });
          }, reject);
        };
        window.addEventListener(eventType, onEvent, true);
      });
    },
    // From navigation start (performance.now() counts from it) until Ask is usable.
    watchFirstOpen(limitMs) {
      const seen = [];
      const watcher = watchState(seen);
      window.__rr.firstOpen = until(checks.ask(), limitMs, watcher.attach).then((t1) => {
        watcher.stop();
        const nav = performance.getEntriesByType('navigation')[0];
        return { t0: 0, t1, states: seen, responseEnd: nav ? nav.responseEnd : null,
                 domContentLoaded: nav ? nav.domContentLoadedEventEnd : null, ...within(0, t1) };
      });
    },
    waitFor(name, limitMs, args) {
      return until(checks[name](args || {}, []), limitMs);
    },
  };
})();
"""


# ---- Figures ---------------------------------------------------------------------------------


@dataclass
class Measure:
    """One measured quantity: its values (ms), its goal, and the floor it is compared with."""

    name: str
    goal_ms: float | None = None
    values: list[float] = field(default_factory=list)
    floor: Measure | None = None

    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")


def _split(result: dict[str, Any]) -> dict[str, float]:
    """Where one interaction's time went, from what the page saw (ms, or a count for "(n)")."""
    t0, t1 = result["t0"], result["t1"]
    split = {"total": t1 - t0}
    sent, received = result["sent"], result["received"]
    if sent:
        request = sent[0][0]
        replies = [t for t, _ in received if t >= request]
        split["input → request sent"] = request - t0
        if replies:
            split["request → first reply"] = replies[0] - request
            split["first → last reply"] = replies[-1] - replies[0]
            split["last reply → drawn"] = t1 - replies[-1]
    split["received (KB)"] = sum(n for _, n in received) / 1024
    split["messages (n)"] = len(received)
    states = result["states"]
    running = next((t for t, s in states if s == "running"), None)
    over = next((t for t, s in reversed(states) if s == "notRunning"), None)
    if running is not None and over is not None:
        split["script state running"] = over - running
    split["long tasks"] = sum(d for _, d in result["longTasks"])
    split["long tasks (n)"] = len(result["longTasks"])
    scripts = [r for r in result["resources"] if r["kind"] == "script"]
    split["JS chunks (n)"] = len(scripts)
    if scripts:
        split["JS chunks done at"] = max(r["end"] for r in scripts) - t0
    images = [r for r in result["resources"] if r["kind"] == "img"]
    if images:
        split["image requested at"] = max(r["start"] for r in images) - t0
        split["image fetch"] = max(r["end"] - r["start"] for r in images)
    return split


TRACE_CATEGORIES = [
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "blink.user_timing",
    "toplevel",
]


@dataclass(frozen=True)
class Profile:
    """One traced Document visit: its time, the renderer main thread's busy time and where it went."""

    visit_ms: float
    busy_ms: float
    by_event: list[tuple[str, float]]  # self time (ms) by trace event: FunctionCall, Layout, Paint…
    by_file: list[tuple[str, float]]  # JavaScript self time (ms) by script file, from V8's sampler
    # The websocket on the network, ms after the click: the rerun request out, the server's last
    # message in. Not held up by a busy main thread, unlike what the page's own listeners see.
    request_ms: float | None
    last_reply_ms: float | None


def _main_thread(trace: dict[str, Any]) -> tuple[list[dict[str, Any]], float, float]:
    """The renderer main thread's complete events, and the probe's two marks (trace µs)."""
    events = trace["traceEvents"]
    marks = {e["name"]: e for e in events if e.get("name") in ("rr-start", "rr-end")}
    if len(marks) < 2:
        return [], 0.0, 0.0
    pid = marks["rr-start"]["pid"]
    main = next(
        (
            e["tid"]
            for e in events
            if e.get("pid") == pid
            and e.get("name") == "thread_name"
            and e["args"].get("name") == "CrRendererMain"
        ),
        None,
    )
    spans = [
        e
        for e in events
        if e.get("pid") == pid and e.get("tid") == main and e.get("ph") == "X" and "dur" in e
    ]
    return spans, marks["rr-start"]["ts"], marks["rr-end"]["ts"]


def _self_time_by_event(
    spans: list[dict[str, Any]], start: float, end: float
) -> tuple[float, list[tuple[str, float]]]:
    """Busy ms of the thread within [start, end], and self ms by event name (nested events nest)."""
    busy = 0.0
    self_time: dict[str, float] = {}
    stack: list[tuple[float, str, list[float]]] = []  # (end, name, [in children, own])

    def close(until: float) -> None:
        while stack and stack[-1][0] <= until:
            _, name, (children, own) = stack.pop()
            self_time[name] = self_time.get(name, 0.0) + own - children

    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        ts, dur = e["ts"], e["dur"]
        if ts + dur < start or ts > end:
            continue
        close(ts)
        own = min(ts + dur, end) - max(ts, start)
        if stack:
            stack[-1][2][0] += own
        else:
            busy += own
        stack.append((ts + dur, e["name"], [0.0, own]))
    close(float("inf"))
    return busy / 1000, sorted(((n, us / 1000) for n, us in self_time.items()), key=lambda kv: -kv[1])


def _self_time_by_file(profile: dict[str, Any], start: float, end: float) -> list[tuple[str, float]]:
    """JavaScript self ms by script file, from a V8 CPU profile, within [start, end] (trace µs:
    the profiler and the trace share Chrome's monotonic clock)."""
    frames = {n["id"]: n["callFrame"] for n in profile["nodes"]}
    by_file: dict[str, float] = {}
    at = profile["startTime"]
    for node, delta in zip(profile["samples"], profile["timeDeltas"], strict=True):
        at += delta
        if not start <= at <= end:
            continue
        frame = frames[node]
        name = frame["url"].rsplit("/", 1)[-1] if frame["url"] else frame["functionName"]
        if name in ("(idle)", "(program)"):
            continue  # not JavaScript: the trace's events say what it was
        by_file[name or "(anonymous)"] = by_file.get(name or "(anonymous)", 0.0) + delta / 1000
    return sorted(by_file.items(), key=lambda kv: -kv[1])


def _spread(values: list[float]) -> str:
    if len(values) < 2:
        return ""
    return f"{min(values):,.0f}–{max(values):,.0f}"


def print_table(measures: list[Measure], rounds: int) -> None:
    print()
    header = f"{'measure':<44} {'n':>3} {'median ms':>10} {'min–max ms':>14} {'goal ms':>8} {'median/goal':>11} {'× floor':>8}"
    print(header)
    print("-" * len(header))
    for m in measures:
        goal = f"{m.goal_ms:,.0f}" if m.goal_ms else "—"
        ratio = f"{m.median() / m.goal_ms:.2f}" if m.goal_ms and m.values else "—"
        floor = f"{m.median() / m.floor.median():.1f}" if m.floor and m.floor.values else "—"
        print(
            f"{m.name:<44} {len(m.values):>3} {m.median():>10,.0f} {_spread(m.values):>14} "
            f"{goal:>8} {ratio:>11} {floor:>8}"
        )
        if m.values:
            print(f"{'':<44}     each: " + ", ".join(f"{v:,.0f}" for v in m.values))
    print(f"\nrounds: {rounds}")


def print_splits(splits: dict[str, list[dict[str, float]]]) -> None:
    """Medians of each part, per measure: where a visit's time goes."""
    for name, rows in splits.items():
        keys = [k for k in rows[0] if all(k in r for r in rows)]
        parts = ", ".join(
            f"{k} {statistics.median(r[k] for r in rows):,.0f}" + ("" if k.endswith(")") else " ms")
            for k in keys
        )
        print(textwrap.fill(f"{name}: {parts}", width=110, initial_indent="  ", subsequent_indent="      "))


# ---- Driving the app --------------------------------------------------------------------------


@contextmanager
def tab(browser: Any) -> Iterator[Any]:
    with kit.new_tab(browser) as page:
        page.context.add_init_script(PROBE)
        yield page


def timed(
    page: Any, name: str, event: str, action: Any, args: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Arm the probe for ``event``, do ``action``, and return what the page measured."""
    page.evaluate("([n, e, l, a]) => window.__rr.arm(n, e, l, a)", [name, event, DRAW_LIMIT_MS, args])
    action()
    result: dict[str, Any] = page.evaluate("() => window.__rr.result")
    return result


def wait_in_page(page: Any, name: str, limit_ms: int, args: dict[str, Any] | None = None) -> None:
    page.evaluate("([n, l, a]) => window.__rr.waitFor(n, l, a)", [name, limit_ms, args])


def nav_link(page: Any, name: str) -> Any:
    return page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=name, exact=True)


def first_open(
    browser: Any, scratch: Path, rounds: int
) -> tuple[Measure, list[dict[str, float]], list[float]]:
    """Each round: a fresh server, a fresh browser context, navigate, time until Ask is usable."""
    measure = Measure("first open, fresh server → Ask usable", FIRST_OPEN_GOAL_MS)
    splits: list[dict[str, float]] = []
    health: list[float] = []
    for i in range(rounds):
        with kit.serve_app(scratch / f"first-open-{i}") as server, tab(browser) as page:
            health.append(server.healthy_after_s * 1000)
            page.context.add_init_script(f"window.__rr.watchFirstOpen({DRAW_LIMIT_MS})")
            page.goto(server.url, wait_until="commit")
            result = page.evaluate("() => window.__rr.firstOpen")
            measure.values.append(result["t1"])
            split = _split(result)
            split["HTML received"] = result["responseEnd"] or 0.0
            split["DOM ready"] = result["domContentLoaded"] or 0.0
            splits.append(split)
            if i == 0:
                page.screenshot(path=str(ARTIFACTS / "first_open.png"))
    return measure, splits, health


def find_document(pages: int) -> tuple[Path, str]:
    """A real ~``pages``-page PDF from ../shared/data when there is one, else a generated one."""
    if pages == 400 and DOCUMENTS.is_dir():
        import pymupdf

        for pdf in sorted(DOCUMENTS.glob("*.pdf")):
            try:
                with pymupdf.open(pdf) as doc:
                    count = doc.page_count
            except Exception:  # noqa: BLE001 - a broken file is simply not the one we look for
                continue
            if 350 <= count <= 450:
                return pdf, "What does this section say about penalties?"
    return pdf_path(pages), QUESTION


def upload_and_run(page: Any, url: str, pdf: Path, question: str) -> tuple[int, float, float]:
    """Ask: upload ``pdf``, ask ``question`` with the default methods, run. Returns pages, s, s."""
    from playwright.sync_api import expect

    main = kit.main_area(page)
    page.goto(url)
    wait_in_page(page, "ask", kit.STARTUP_TIMEOUT_S * 1000)
    main.locator('[data-testid="stRadio"]').get_by_text("My file", exact=True).click()
    kit.settle(page)
    started = time.monotonic()
    main.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(pdf))
    loaded = main.get_by_text(re.compile(rf"{re.escape(pdf.name)}\s*— [\d,]+ pages"))
    expect(loaded).to_be_visible(timeout=LOAD_LIMIT_MS)
    kit.settle(page, LOAD_LIMIT_MS)
    load_s = time.monotonic() - started
    count = re.search(r"— ([\d,]+) pages", loaded.inner_text())
    assert count, "the Ask screen did not say how many pages it read"
    pages = int(count.group(1).replace(",", ""))
    box = main.get_by_label("Question", exact=True)
    box.fill(question)
    box.press("Control+Enter")
    kit.settle(page)
    started = time.monotonic()
    main.get_by_role("button", name="Run").click()
    expect(main.get_by_role("heading", name="Results")).to_be_visible(timeout=LOAD_LIMIT_MS)
    wait_in_page(page, "ask", LOAD_LIMIT_MS)
    return pages, load_s, time.monotonic() - started


def visit_document(page: Any, pages: int) -> dict[str, Any]:
    """Click Document in the sidebar; timed in the page until the screen is drawn."""
    return timed(
        page, "document", "click", nav_link(page, "Document").click, {"pages": pages, "longStrip": LONG_STRIP}
    )


def document_screen(
    browser: Any, scratch: Path, size: int, rounds: int, floor: Measure
) -> tuple[list[Measure], dict[str, list[dict[str, float]]], list[tuple[str, Profile]]]:
    pdf, question = find_document(size)
    with kit.serve_app(scratch / f"document-{size}") as server, tab(browser) as page:
        pages, load_s, run_s = upload_and_run(page, server.url, pdf, question)
        label = f"{pages:,}p"
        print(
            f"{pdf.name}: {pages:,} pages; upload and load {load_s:.1f} s, Baseline + R&R run {run_s:.1f} s"
        )
        goal = DOCUMENT_GOAL_MS.get(size)
        first = Measure(f"Document {label}, first visit", goal)
        again = Measure(f"Document {label}, again (via Ask)", goal)
        turn = Measure(f"page turn {label} (+ button)", PAGE_TURN_GOAL_MS, floor=floor)
        slider = Measure(f"slider step {label}, browser wall time", None, floor=floor)
        splits: dict[str, list[dict[str, float]]] = {first.name: [], again.name: []}

        for i in range(rounds + 1):
            if i:
                nav_link(page, "Ask").click()
                wait_in_page(page, "ask", DRAW_LIMIT_MS)
            result = visit_document(page, pages)
            (again if i else first).values.append(result["t1"] - result["t0"])
            splits[(again if i else first).name].append(_split(result))
            if i == 0:
                # Taken as the condition first held: what the window showed, then the whole screen.
                page.screenshot(path=str(ARTIFACTS / f"document_{size}_window.png"))
                kit.shot(page, ARTIFACTS / f"document_{size}.png")

        again_traced = traced_visit(page, pages, via_ask=True)

        splits[turn.name] = []
        step_up = (
            page.locator('[data-testid="stNumberInput"]')
            .filter(has_text="Page")
            .locator('[data-testid="stNumberInputStepUp"]')
        )
        for _ in range(rounds):
            src = page.evaluate(
                """() => document.querySelector('[data-testid="stMain"] [data-testid="stImage"] img').src"""
            )
            result = timed(page, "pageTurn", "click", step_up.click, {"src": src})
            turn.values.append(result["t1"] - result["t0"])
            splits[turn.name].append(_split(result))
        kit.shot(page, ARTIFACTS / f"document_{size}_turned.png")

        splits[slider.name] = []
        thumb = (
            page.locator('[data-testid="stSidebar"] [data-testid="stSlider"]')
            .filter(has_text="Reprompt interval")
            .locator('input[type="range"]')
        )
        wait_in_page(page, "slider", DRAW_LIMIT_MS)
        for _ in range(rounds):
            result = timed(page, "rerun", "keydown", lambda: thumb.press("ArrowRight"))
            slider.values.append(result["t1"] - result["t0"])
            splits[slider.name].append(_split(result))

        # A first visit traced: a new session (a new browser context, so the code of the
        # elements the Ask screen does not use is fetched again), the same upload and run.
        with tab(browser) as fresh:
            upload_and_run(fresh, server.url, pdf, question)
            first_traced = traced_visit(fresh, pages, via_ask=False)
    profiles = [(f"Document {label}, first visit", first_traced), (f"Document {label}, again", again_traced)]
    return [first, again, turn, slider], splits, profiles


def traced_visit(page: Any, pages: int, *, via_ask: bool) -> Profile:
    """A visit to Document (``via_ask``: back to Ask first) with a Chrome trace and V8's sampling
    profiler on; they slow it down a little, so it is not in the table."""
    if via_ask:
        nav_link(page, "Ask").click()
        wait_in_page(page, "ask", DRAW_LIMIT_MS)
    browser = page.context.browser
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 500})  # µs
    frames: list[tuple[str, float]] = []  # ("sent" or "received", monotonic seconds)
    cdp.on("Network.webSocketFrameSent", lambda e: frames.append(("sent", e["timestamp"])))
    cdp.on("Network.webSocketFrameReceived", lambda e: frames.append(("received", e["timestamp"])))
    cdp.send("Network.enable")
    browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
    cdp.send("Profiler.start")
    try:
        result = visit_document(page, pages)
    finally:
        profile = cdp.send("Profiler.stop")["profile"]
        trace = json.loads(browser.stop_tracing())
        cdp.detach()
    spans, start, end = _main_thread(trace)
    busy, by_event = _self_time_by_event(spans, start, end)
    # Network timestamps are seconds of the same monotonic clock as the trace's µs.
    moments = [(kind, t * 1e6) for kind, t in frames if start <= t * 1e6 <= end]
    request = next((t for kind, t in moments if kind == "sent"), None)
    replies = [t for kind, t in moments if kind == "received" and request is not None and t >= request]
    return Profile(
        visit_ms=result["t1"] - result["t0"],
        busy_ms=busy,
        by_event=by_event,
        by_file=_self_time_by_file(profile, start, end),
        request_ms=(request - start) / 1000 if request is not None else None,
        last_reply_ms=(replies[-1] - start) / 1000 if replies else None,
    )


def floor_rerun(browser: Any, scratch: Path, rounds: int) -> tuple[Measure, list[dict[str, float]]]:
    """A slider step on a trivial app: what any rerun costs, browser and server together."""
    script = scratch / "floor_app.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(FLOOR_APP)
    measure = Measure("floor: slider step on a trivial app")
    splits: list[dict[str, float]] = []
    with kit.serve_app(scratch / "floor", script=script) as server, tab(browser) as page:
        page.goto(server.url)
        # A key pressed while the first run still goes is lost: wait until it is over.
        wait_in_page(page, "slider", kit.STARTUP_TIMEOUT_S * 1000)
        thumb = page.locator('[data-testid="stSlider"] input[type="range"]')
        for step in range(rounds + 1):  # the first is a warm-up
            result = timed(page, "floor", "keydown", lambda: thumb.press("ArrowRight"), {"value": 51 + step})
            measure.values.append(result["t1"] - result["t0"])
            splits.append(_split(result))
    return Measure(measure.name, values=measure.values[1:]), splits[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="400,3000", help="document sizes in pages, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    try:
        executable = kit.chromium_path()
    except kit.BrowserUnavailable as exc:
        print(f"bench_browser: skipped, {exc}")  # `make bench` goes on to the other benchmarks
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    print(
        f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f} ({os.cpu_count()} cores)"
    )

    measures: list[Measure] = []
    splits: dict[str, list[dict[str, float]]] = {}
    profiles: list[tuple[str, Profile]] = []
    with (
        tempfile.TemporaryDirectory(prefix="rr-bench-browser-") as tmp,
        kit.launch_chromium(executable) as browser,
    ):
        scratch = Path(tmp)
        opened, open_splits, health = first_open(browser, scratch, args.rounds)
        measures.append(opened)
        splits[opened.name] = open_splits
        print(
            f"server start to healthy: {', '.join(f'{h:,.0f}' for h in health)} ms (not in the figure above)"
        )
        floor, floor_splits = floor_rerun(browser, scratch, args.rounds)
        splits[floor.name] = floor_splits
        for size in sizes:
            found, parts, profile = document_screen(browser, scratch, size, args.rounds, floor)
            measures += found
            splits.update(parts)
            profiles += profile
        measures.append(floor)

    print_table(measures, args.rounds)
    print(
        "\nWhere the time goes (medians, ms after the input, as the page sees it: the request goes out on\n"
        "the websocket, the server's messages come in (later than they arrive when the main thread is busy),\n"
        "the last one, then drawn; 'script state running' is Streamlit's own running flag; long tasks are\n"
        "the main thread busy for 50 ms or more at a time):"
    )
    print_splits(splits)
    print(
        "\nThe browser's main thread during a traced Document visit, not in the table (Chrome trace: self\n"
        "time by event, where FunctionCall, v8.evaluateModule, RunMicrotasks… are JavaScript, UpdateLayoutTree\n"
        "is style; then JavaScript's self time by script file, from V8's sampling profiler):"
    )
    for name, profile in profiles:
        print(f"  {name}: {profile.visit_ms:,.0f} ms, main thread busy {profile.busy_ms:,.0f} ms")
        if profile.request_ms is not None and profile.last_reply_ms is not None:
            print(
                f"    on the network: request out at {profile.request_ms:,.0f} ms, the server's last message in at "
                f"{profile.last_reply_ms:,.0f} ms, drawn {profile.visit_ms - profile.last_reply_ms:,.0f} ms later"
            )
        for label, parts in (("by event", profile.by_event), ("JavaScript by file", profile.by_file)):
            line = f"{label} (ms): " + ", ".join(f"{part} {ms:,.0f}" for part, ms in parts[:8])
            print(textwrap.fill(line, width=110, initial_indent="    ", subsequent_indent="      "))
    load_end = os.getloadavg()
    print(f"\nload average at end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    print(f"screenshots: {ARTIFACTS.relative_to(ROOT)}/")


if __name__ == "__main__":
    main()
