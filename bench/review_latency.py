"""Reviewer latency in real Chromium: a scripted review session of 30 notes.

Starts the app (``streamlit run app.py`` from the checkout, so the project's
``.streamlit/config.toml`` applies) on a temporary SQLite store holding 30
synthetic notes whose pre-annotation was damaged on purpose: a false span to
delete, a missing span to add, a wrong label to fix, a span one token short to
extend (some notes are left clean). A scripted reviewer in Debian's chromium
(Playwright) fixes each note with the keyboard (a mouse drag to select text
for additions) and accepts it with ``A``.

Measured:

- ``edit_ms``: one edit key, from the keydown until the next animation frame
  (the note redrawn), dispatched and timed inside the page with
  ``performance.now()``; ``edit_keys_sending`` counts actions an edit key's
  handler sent to the server (0: no server round trip);
  ``server_messages_during_edits`` counts every websocket message the page sent
  while edits ran, including an accept of the note before, held in the browser
  until the server acknowledged the one before it and sent then;
- ``next_note_ms``: from ``A`` until the next note's editor is drawn and ready;
- keystrokes per correction, by kind, navigation included: Tab to a false
  span, ``n`` to the spans shown uncertain (the wrong label and the short span
  came with a low score), ``n`` and Enter for a missing span shown as a
  possible miss of the right label, else one mouse selection plus the label
  key(s).

At the end every saved note is compared with its intended layer. Prints one
JSON object.

    .venv/bin/python bench/review_latency.py [--notes 30] [--seed 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PASSWORD = "bench password 1"

PRESS = """async ([key, shift]) => {
  const target = document.activeElement || document.body;
  const sends = () => (window.__deidReview && window.__deidReview.sends) || 0;
  const t0 = performance.now();
  const before = sends();
  target.dispatchEvent(new KeyboardEvent("keydown", {key, shiftKey: shift, bubbles: true,
                                                     cancelable: true}));
  const caused = sends() - before;  // actions the key handler itself sent to the server
  await new Promise((r) => requestAnimationFrame(() => r()));
  return [performance.now() - t0, caused];
}"""

# A key reaches the new note's editor: its token cursor moves right, then back.
PROBE = """async (doc) => {
  const cursor = () => { const c = document.querySelector('.deid-review[data-doc="' + doc + '"] .deid-cursor');
                         return c ? Number(c.dataset.s) : null; };
  const key = (k) => (document.activeElement || document.body).dispatchEvent(
      new KeyboardEvent("keydown", {key: k, bubbles: true, cancelable: true}));
  const before = cursor();
  key("ArrowRight");
  await new Promise((r) => requestAnimationFrame(() => r()));
  const moved = cursor();
  key("ArrowLeft");
  await new Promise((r) => requestAnimationFrame(() => r()));
  return before !== null && moved !== null && moved > before && cursor() === before;
}"""


def damage(doc, tokens, rng):
    """(prediction, corrections): the gold layer with 0-3 mistakes a reviewer must fix."""
    from deid_core.spans import Span

    gold = sorted(doc.spans, key=lambda s: s.start)
    pred = [Span(s.start, s.end, s.label, "crf:bench", 0.95) for s in gold]
    fixes = []
    kinds = rng.sample(["delete", "add", "relabel", "extend"], k=rng.choice([0, 1, 2, 3]))
    if "add" in kinds and len(pred) > 3:
        victim = pred.pop(rng.randrange(len(pred)))
        fixes.append(("add", victim))
    if "relabel" in kinds and pred:
        i = rng.randrange(len(pred))
        wrong = "AGE" if pred[i].label != "AGE" else "DATE"
        fixes.append(("relabel", pred[i]))
        pred[i] = Span(pred[i].start, pred[i].end, wrong, "crf:bench", 0.6)
    if "extend" in kinds:
        multi = [i for i, s in enumerate(pred) if sum(1 for t in tokens if s.start <= t.start and t.end <= s.end) > 1
                 and pred[i].source == "crf:bench" and pred[i].score == 0.95]
        if multi:
            i = rng.choice(multi)
            inside = [t for t in tokens if pred[i].start <= t.start and t.end <= pred[i].end]
            fixes.append(("extend", pred[i]))
            pred[i] = Span(pred[i].start, inside[-2].end, pred[i].label, "crf:bench", 0.7)
    if "delete" in kinds:
        free = [t for t in tokens if t.text.isalpha() and len(t.text) > 3
                and not any(s.start < t.end and t.start < s.end for s in gold)]
        if free:
            t = rng.choice(free)
            false = Span(t.start, t.end, "CITY", "crf:bench", 0.9)
            pred.append(false)
            fixes.append(("delete", false))
    return sorted(pred, key=lambda s: s.start), fixes


def seed(url: str, n: int, rng: random.Random):
    from deid_core.engine.tokenize import tokenize
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.store.users import create_user
    from deid_core.synthetic import generate_notes

    engine = open_store(url)
    create_user(engine, "rev", PASSWORD, role="reviewer")
    repo.create_project(engine, "bench", lang="en", scheme="i2b2_2014")
    plan = {}
    docs = []
    for i, doc in enumerate(generate_notes(n, seed=rng.randrange(10**6))):
        tokens = tokenize(doc.text).tokens
        pred, fixes = damage(doc, tokens, rng)
        plan[doc.id] = {"gold": {s.key for s in doc.spans}, "fixes": fixes, "text": doc.text}
        docs.append(doc.with_spans(pred).with_meta(logprob=-1000.0 + i, logprob_per_token=-1.0))
    repo.import_documents(engine, "bench", docs, annotations="predictions")
    return engine, plan


def start_app(url: str, tmp: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = dict(os.environ, DEID_DATABASE_URL=url, DEID_DATA_DIR=str(tmp / "data"),
               DEID_SESSION_SECRET="bench only")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=open(tmp / "streamlit.log", "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"http://127.0.0.1:{port}/"
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("streamlit did not start: see " + str(tmp / "streamlit.log"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, default=30)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        print(json.dumps({"error": f"{CHROMIUM} is missing"}))
        return 1
    from playwright.sync_api import sync_playwright

    from deid_core.schemes import load_scheme
    from deid_core.store import repository as repo
    from deid_core.ui.render import shortcut_order

    tmp = Path(tempfile.mkdtemp(prefix="deid-bench-review-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    rng = random.Random(args.seed)
    engine, plan = seed(url, args.notes, rng)
    labels = shortcut_order(load_scheme("i2b2_2014").names, "i2b2_2014")
    proc, base = start_app(url, tmp)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    edit_ms: list[float] = []
    next_ms: list[float] = []
    keys: dict[str, list[int]] = {"delete": [], "add": [], "relabel": [], "extend": [], "accept_clean": []}
    sent = {"n": 0}
    received: list[float] = []  # perf_counter of each websocket message from the server
    first_reply_ms: list[float] = []
    edit_messages = 0
    edit_sends = 0
    ahead_shown = 0
    probe_failures = 0
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            def on_ws(ws) -> None:  # noqa: ANN001
                ws.on("framesent", lambda _f: sent.__setitem__("n", sent["n"] + 1))
                ws.on("framereceived", lambda _f: received.append(time.perf_counter()))

            page.on("websocket", on_ws)
            page.goto(base)
            page.get_by_role("textbox", name="Username").fill("rev")
            page.get_by_role("textbox", name="Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("button", name="Review next").click()
            page.locator(".deid-review .deid-note").wait_for(timeout=60_000)

            def press(key: str, shift: bool = False) -> float:
                nonlocal edit_messages, edit_sends
                before = sent["n"]
                ms, caused = page.evaluate(PRESS, [key, shift])
                edit_messages += sent["n"] - before
                edit_sends += int(caused)
                return float(ms)

            def active() -> tuple[int, int] | None:
                return page.evaluate("""() => { const a = document.querySelector('.deid-review .deid-active');
                    return a ? [Number(a.dataset.s), Number(a.dataset.e)] : null; }""")

            def tab_to(span, key: str = "Tab") -> int:
                """Press Tab (every span) or n (only what needs checking) until ``span`` is current."""
                n = 0
                limit = 2 * int(page.locator(".deid-review").get_attribute("data-spans") or 0) + 4
                while active() != [span.start, span.end] and n <= limit:
                    edit_ms.append(press(key))
                    n += 1
                if active() != [span.start, span.end]:
                    raise RuntimeError(f"span {span.start}..{span.end} not reachable by Tab")
                return n

            def label_keys(label: str) -> list[str]:
                """A digit for the first nine labels, else the palette with the shortest
                prefix (at least two letters) whose first match is the label."""
                i = labels.index(label)
                if i < 9:
                    return [str(i + 1)]
                for n in range(2, len(label) + 1):
                    if next(x for x in labels if x.startswith(label[:n])) == label:
                        return ["/", *label[:n].lower(), "Enter"]
                raise ValueError(label)

            for _n in range(args.notes):
                root = page.locator(".deid-review")
                doc_db = int(root.get_attribute("data-doc"))
                ext = repo.get_document(engine, doc_db).document.id
                fixes = plan[ext]["fixes"]
                page.locator(".deid-review .deid-note").focus()
                for kind, span in fixes:
                    if kind == "add":
                        hint = page.evaluate("""([s, e]) => {
                            const h = document.querySelector('.deid-review span.deid-near[data-s="' + s + '"][data-e="' + e + '"]');
                            return h ? h.dataset.label : null; }""", [span.start, span.end])
                        if hint == span.label:  # shown as a possible miss: n to it, Enter
                            n = 0
                            while active() != [span.start, span.end] and n < 60:
                                edit_ms.append(press("n"))
                                n += 1
                            edit_ms.append(press("Enter"))
                            keys["add"].append(n + 1)
                            continue
                        page.evaluate("""([s, e]) => {
                            const note = document.querySelector('.deid-review .deid-note');
                            const pieces = Array.from(note.querySelectorAll('.deid-text'));
                            const a = pieces.find((x) => Number(x.dataset.s) <= s && s < Number(x.dataset.e));
                            const b = pieces.find((x) => Number(x.dataset.s) < e && e <= Number(x.dataset.e));
                            const cp = (str, n) => Array.from(str).slice(0, n).join('').length;
                            const r = document.createRange();
                            r.setStart(a.firstChild, cp(a.textContent, s - Number(a.dataset.s)));
                            r.setEnd(b.firstChild, cp(b.textContent, e - Number(b.dataset.s)));
                            const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(r);
                        }""", [span.start, span.end])
                        ks = label_keys(span.label)
                        edit_ms.append(press(ks[0]))
                        if ks[0] == "/":  # the palette's input takes real typing
                            page.keyboard.type("".join(ks[1:-1]))
                            page.keyboard.press("Enter")
                        keys["add"].append(len(ks))
                    elif kind == "delete":
                        n = tab_to(span)
                        edit_ms.append(press("Delete"))
                        keys["delete"].append(n + 1)
                    elif kind == "relabel":
                        wrong = "AGE" if span.label != "AGE" else "DATE"
                        from deid_core.spans import Span

                        n = tab_to(Span(span.start, span.end, wrong), "n")  # shown uncertain
                        ks = label_keys(span.label)
                        edit_ms.append(press(ks[0]))
                        if ks[0] == "/":
                            page.keyboard.type("".join(ks[1:-1]))
                            page.keyboard.press("Enter")
                        keys["relabel"].append(n + len(ks))
                    else:  # extend: the prediction stopped one token short
                        from deid_core.spans import Span

                        inside_end = page.evaluate("""([s]) => {
                            const m = document.querySelector('.deid-review mark[data-s="' + s + '"]');
                            return Number(m.dataset.e); }""", [span.start])
                        n = tab_to(Span(span.start, inside_end, span.label), "n")  # shown uncertain
                        edit_ms.append(press("]"))
                        keys["extend"].append(n + 1)
                if not fixes:
                    keys["accept_clean"].append(1)
                t0 = time.perf_counter()
                page.keyboard.press("a")
                if _n + 1 < args.notes:
                    page.locator(f'.deid-review:not([data-doc="{doc_db}"])[data-ready] .deid-note').wait_for(
                        timeout=60_000)
                    new_doc = page.locator(".deid-review").get_attribute("data-doc")
                    if not page.evaluate(PROBE, new_doc):
                        probe_failures += 1
                    next_ms.append((time.perf_counter() - t0) * 1000)
                    ahead_shown += page.locator(".deid-review").get_attribute("data-opened") == "ahead"
                    replies = [r for r in received if r > t0]
                    if replies:
                        first_reply_ms.append((replies[0] - t0) * 1000)
                else:
                    page.get_by_text(f"Saved note {ext}").first.wait_for(timeout=60_000)
            acks = page.evaluate("() => (window.__deidReview && window.__deidReview.acks) || []")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    # every note saved as intended?
    match, mismatched = 0, []
    for ext, item in plan.items():
        layers = repo.get_document(engine, repo.find_document(engine, "bench", ext))
        if layers.status == "reviewed" and {s.key for s in layers.document.spans} == item["gold"]:
            match += 1
        else:
            mismatched.append({"note": ext, "status": layers.status,
                               "fixes": [k for k, _s in item["fixes"]],
                               "missing": sorted(item["gold"] - {s.key for s in layers.document.spans}),
                               "extra": sorted({s.key for s in layers.document.spans} - item["gold"])})

    # from A (the accept queued in the browser) until the server acknowledged it
    saved_ms = [float(a["ms"]) for a in acks]

    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    print(json.dumps({
        "notes": args.notes,
        "corrections": {k: len(v) for k, v in keys.items() if k != "accept_clean"},
        "clean_notes": len(keys["accept_clean"]),
        "edit_keys_timed": len(edit_ms),
        "edit_ms_median": round(statistics.median(edit_ms), 1),
        "edit_ms_p95": round(pct(edit_ms, 0.95), 1),
        "edit_ms_max": round(max(edit_ms), 1),
        "edit_keys_sending": edit_sends,
        "server_messages_during_edits": edit_messages,
        "next_note_ms_median": round(statistics.median(next_ms), 1),
        "next_note_ms_p95": round(pct(next_ms, 0.95), 1),
        "next_note_shown_ahead": ahead_shown,
        "next_note_key_probe_failures": probe_failures,
        "accept_saved_ms_median": round(statistics.median(saved_ms), 1) if saved_ms else None,
        "accept_saved_ms_p95": round(pct(saved_ms, 0.95), 1) if saved_ms else None,
        # from A to the server's first websocket message (the rest is drawing in the browser)
        "next_note_first_reply_ms_median": round(statistics.median(first_reply_ms), 1) if first_reply_ms else None,
        "keystrokes_per_correction": {k: round(statistics.mean(v), 2) for k, v in keys.items() if v},
        "notes_saved_as_intended": match,
        "mismatched": mismatched,  # ids, offsets and labels only
        "targets": {"edit_ms_median": 50, "edit_ms_p95": 100, "next_note_ms_median": 500},
        "bench_cpu_s": round(time.process_time() - cpu0, 1),
        "wall_s": round(time.perf_counter() - wall0, 1),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }, indent=2))
    return 0 if match == args.notes else 1


if __name__ == "__main__":
    sys.exit(main())
