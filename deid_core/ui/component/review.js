// Review editor for deid-workbench (Streamlit components v2, no build step).
//
// The browser owns the note's spans while the reviewer works: add, delete,
// relabel, extend, shrink, undo and redo change a local copy and redraw the
// note, with no Streamlit rerun. The server hears about the layer only when it
// must: Accept, Save, Skip, Back, and an autosaved draft a moment after the
// last edit. Every change is also written to localStorage, so a closed tab
// loses nothing; the draft is offered back when the note is opened again.
//
// Security: note text and labels are untrusted. They are only ever placed with
// textContent / setAttribute, never innerHTML. Offsets are Unicode code points
// (Python string offsets), not UTF-16 units. The server re-validates every
// layer it receives (token boundaries, labels, no overlaps).
//
// Streamlit calls this function again whenever `data` changes, without running
// the previous cleanup, so per-note state and the key listener live on window.
//
// The next note comes with the open one (`data.next`, claimed for this reviewer
// ahead of time, like Prodigy's task queue). Accept or Skip shows it at once and
// sends the decision with `shown`; the server's run saves the note and sends the
// shown note as the open one, which this editor adopts without redrawing (edits
// made in the meantime stay). Actions go to the server one at a time: the next
// is sent once the server acknowledged the last (`data.ack`), so a second accept
// never interrupts the run saving the first. A conflict comes back as the
// server's data for the earlier note, which then replaces the one on screen.

const W = (window.__deidReview = window.__deidReview || { docs: {}, keys: {}, live: {}, sync: {} });
W.live = W.live || {};
W.sync = W.sync || {};
const AUTOSAVE_MS = 1500;
// An action the server never acknowledged (an error in its run) stops blocking the next after this.
const ACK_WAIT_MS = 10000;
const STORE_PREFIX = "deid-review-draft:";

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

const keyOf = (s) => s.s + ":" + s.e + ":" + s.l;
const sortSpans = (a) => a.sort((x, y) => x.s - y.s || x.e - y.e || (x.l < y.l ? -1 : x.l > y.l ? 1 : 0));
const sameLayer = (a, b) => a.length === b.length && a.every((s, i) => keyOf(s) === keyOf(b[i]));
const overlaps = (a, b) => a.s < b.e && b.s < a.e;

function readStore(key) {
  try {
    const raw = window.localStorage.getItem(key);
    return raw ? JSON.parse(raw) : null;
  } catch (e) {
    return null;
  }
}

function writeStore(key, value) {
  try {
    if (value === null) window.localStorage.removeItem(key);
    else window.localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    /* storage full or disabled: the server draft still protects the work */
  }
}

function syncOf(slot) {
  if (!W.sync[slot]) W.sync[slot] = { inflight: null, queue: [], left: new Set(), trigger: null, sig: null, timer: null };
  return W.sync[slot];
}

// Queue an action for the server; drafts of the same note collapse into the latest.
function dispatch(slot, payload) {
  const sync = syncOf(slot);
  if (payload.type === "draft") {
    sync.queue = sync.queue.filter((q) => !(q.type === "draft" && q.doc_id === payload.doc_id));
  }
  sync.queue.push(payload);
  sync.made = sync.made || {};
  if (payload.type !== "draft") sync.made[payload.seq] = performance.now(); // acknowledged ones only
  pump(slot);
}

// The server acknowledged the action in flight: log how long it took (bench/review_latency.py reads
// `window.__deidReview.acks`), and let the next go.
function acknowledged(sync) {
  const t0 = (sync.made || {})[sync.inflight.seq];
  if (t0 !== undefined) {
    W.acks = (W.acks || []).slice(-199).concat([{ doc: sync.inflight.doc, ms: performance.now() - t0 }]);
    delete sync.made[sync.inflight.seq];
  }
  sync.left.delete(sync.inflight.doc);
  sync.inflight = null;
}

// Send queued actions while none awaits its acknowledgement (drafts are not waited on).
function pump(slot) {
  const sync = syncOf(slot);
  if (sync.inflight && Date.now() - sync.inflight.at < ACK_WAIT_MS) return;
  if (sync.inflight) {
    sync.left.delete(sync.inflight.doc);
    sync.inflight = null;
  }
  while (sync.queue.length && sync.trigger) {
    const p = sync.queue.shift();
    if (p.wantsNext) {
      // accepted while the note after it was not known yet: it is known now (or never will be)
      delete p.wantsNext;
      const live = W.live[slot];
      if (live && live.doc === String(p.doc_id)) live.moveOn(p);
    }
    if (p.type !== "draft") sync.inflight = { seq: p.seq, doc: String(p.doc_id), at: Date.now() };
    W.sends = (W.sends || 0) + 1; // actions sent so far (bench/review_latency.py)
    sync.trigger("action", p);
    if (sync.inflight) {
      if (sync.timer) clearTimeout(sync.timer);
      sync.timer = setTimeout(() => pump(slot), ACK_WAIT_MS + 50);
      break;
    }
  }
}

export default function (component) {
  const slot = String(component.key || "review");
  const d = component.data || {};
  const sync = syncOf(slot);
  sync.trigger = component.setTriggerValue;
  if (sync.inflight && d.ack !== null && d.ack !== undefined && d.ack === sync.inflight.seq) acknowledged(sync);
  const sig = JSON.stringify([d.doc_id, d.rev, d.ack]);
  const fresh = sig !== sync.sig;
  sync.sig = sig;
  const live = W.live[slot];
  const here = live && live.parent === component.parentElement && live.root.isConnected;
  if (here && live.adopt(d)) {
    // the note on screen: local state, undo history and DOM kept
  } else if (here && (!fresh || sync.left.has(String(d.doc_id)))) {
    // a re-render with data already seen, or a note the reviewer already moved on from (its
    // save is still queued): keep the note on screen, and learn the notes queued after it
    live.extend(d.next || []);
  } else {
    if (d.doc_id !== undefined) {
      // the server shows another note (a conflict, Back, a link): drop what was queued for others
      sync.queue = sync.queue.filter((q) => String(q.doc_id) === String(d.doc_id));
      sync.left.clear();
      if (sync.inflight) sync.left.add(sync.inflight.doc);
    }
    mount(component, d, false);
  }
  pump(slot);
  return () => {
    if (W.keys[slot]) {
      document.removeEventListener("keydown", W.keys[slot], true);
      delete W.keys[slot];
    }
    W.live[slot] = null;
  };
}

function mount(component, d, ahead) {
  const parentElement = component.parentElement;
  const chars = Array.from(d.text || "");
  const tokens = d.tokens || []; // [[start, end], ...] in text order
  const labels = d.labels || [];
  const byName = {};
  labels.forEach((lab) => (byName[lab.name] = lab));
  const uncertainBelow = Number(d.uncertain_below || 0.8);
  const user = String(d.user || "");
  const storeKey = STORE_PREFIX + user + ":" + d.doc_id;
  const slot = String(component.key || "review");
  const numeric = new Set((d.numeric || []).map((t) => t[0] + ":" + t[1]));

  // ------------------------------------------------------------ per-note state
  let st = W.docs[slot];
  const incoming = sortSpans((d.spans || []).map((s) => Object.assign({}, s)));
  if (st && !ahead && st.ahead && st.doc === d.doc_id && st.base === d.base && sameLayer(incoming, st.initial)) {
    st.rev = d.rev; // the server now holds the note shown ahead, unchanged: keep the local edits
    st.ahead = false;
  }
  if (!st || st.doc !== d.doc_id || st.rev !== d.rev) {
    st = {
      doc: d.doc_id,
      rev: d.rev,
      base: d.base,
      ahead: !!ahead, // shown from the previous note's `next`, before the server made it the open note
      initial: incoming.map((s) => Object.assign({}, s)),
      leaving: false, // accepted or skipped, waiting for the server to name the next note
      spans: incoming,
      undo: [],
      redo: [],
      synced: null,
      cursor: 0, // token index (set from d.focus_offset below)
      anchor: null, // token index where a keyboard selection started
      active: null, // {kind: "span"|"hint", s, e}
      help: false,
      palette: null, // {query, pick}
      restore: null,
      timer: null,
      opened: Date.now(),
    };
    st.synced = st.spans.map(keyOf).join("|");
    st.scrollTo = typeof d.focus_offset === "number" ? d.focus_offset : null;
    const kept = readStore(storeKey);
    if (kept && kept.base === d.base && Array.isArray(kept.spans)) {
      if (!sameLayer(sortSpans(kept.spans.slice()), st.spans)) st.restore = kept;
    } else if (kept) {
      writeStore(storeKey, null); // a draft of an older version: saved or replaced since
    }
    W.docs[slot] = st;
  }
  let originSet = new Set((d.origin || []).map(keyOf));

  let seq = 0;
  const send = (type, extra) => {
    if (st.leaving) return; // already accepted or skipped
    seq += 1;
    if (st.timer) {
      clearTimeout(st.timer);
      st.timer = null;
    }
    const payload = Object.assign(
      { type, doc_id: d.doc_id, rev: d.rev, base: d.base, seq: Date.now() * 1000 + seq,
        spans: st.spans.map((s) => ({ s: s.s, e: s.e, l: s.l, src: s.src, sc: s.sc })) },
      extra || {}
    );
    if (type !== "draft") writeStore(storeKey, null);
    st.synced = st.spans.map(keyOf).join("|");
    if (type === "accept" || type === "skip") {
      const sync = syncOf(slot);
      if ((d.next || []).length) {
        moveOn(payload); // the next note at once; the server hears about this one meanwhile
        dispatch(slot, payload);
        return;
      }
      if (sync.inflight || sync.queue.length) {
        // the server is still saving the note before: the one after this is not known yet
        payload.wantsNext = true;
        st.leaving = true;
        draw();
      }
    }
    dispatch(slot, payload);
  };
  // Show the note claimed ahead (if any) in place of this one, which `payload` accepts or skips.
  function moveOn(payload) {
    const nxt = (d.next || [])[0];
    if (!nxt) return;
    payload.shown = nxt.doc_id;
    syncOf(slot).left.add(String(d.doc_id));
    mount(component, Object.assign({}, nxt, { focus: true, next: d.next.slice(1) }), true);
  }

  // ------------------------------------------------------------ tokens
  function tokenAt(offset) {
    // first token ending after offset
    let lo = 0, hi = tokens.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (tokens[mid][1] <= offset) lo = mid + 1;
      else hi = mid;
    }
    return Math.min(lo, Math.max(tokens.length - 1, 0));
  }
  function snap(start, end) {
    if (end <= start || !tokens.length) return null;
    const i = tokenAt(start);
    let j = i;
    while (j < tokens.length && tokens[j][0] < end) j++;
    if (j <= i || tokens[i][0] >= end) return null;
    return [tokens[i][0], tokens[j - 1][1]];
  }
  const textOf = (s) => chars.slice(s.s, s.e).join("");

  // ------------------------------------------------------------ hints (possible misses)
  // Unmarked, token-aligned occurrences of a string that is PHI elsewhere in this note
  // (live, from the local spans) or in this patient's other notes (from the server),
  // plus the model's near misses. Drawn hatched in the label's colour; Enter accepts.
  const starts = new Set(tokens.map((t) => t[0]));
  const ends = new Set(tokens.map((t) => t[1]));
  // An all-digit possible miss inside a range or lab value ("98-107", "120/80") is noise.
  const noisy = (s, e, str) => numeric.has(s + ":" + e) && /^[0-9]+$/.test(str);
  function hints() {
    const wanted = new Map();
    for (const k of d.known || []) if (k.t && k.t.trim().length > 1) wanted.set(k.t, { l: k.l, why: "PHI in another note of this patient" });
    for (const s of st.spans) {
      const t = textOf(s);
      if (t.trim().length > 1) wanted.set(t, { l: s.l, why: "same text as a " + s.l + " span in this note" });
    }
    const text = d.text || "";
    const out = [];
    // code-point offsets of UTF-16 indices, computed lazily once per call
    let map = null;
    const cpOf = (i) => {
      if (!map) {
        map = new Int32Array(text.length + 1);
        let cp = 0;
        for (let u = 0; u < text.length; u++) {
          map[u] = cp;
          const c = text.charCodeAt(u);
          if (c >= 0xd800 && c <= 0xdbff && u + 1 < text.length) { map[u + 1] = cp; u++; }
          cp++;
        }
        map[text.length] = cp;
      }
      return map[i];
    };
    for (const [needle, info] of wanted) {
      let pos = text.indexOf(needle);
      while (pos !== -1) {
        const s = cpOf(pos), e = cpOf(pos + needle.length);
        if (starts.has(s) && ends.has(e) && !noisy(s, e, needle)) {
          const h = { s, e, l: info.l, why: info.why, sc: 1 };
          if (!st.spans.some((x) => overlaps(x, h)) && !out.some((x) => overlaps(x, h))) out.push(h);
        }
        pos = text.indexOf(needle, pos + 1);
      }
    }
    for (const n of d.near || []) {
      if (noisy(n.s, n.e, chars.slice(n.s, n.e).join(""))) continue;
      const h = { s: n.s, e: n.e, l: n.l, sc: n.sc, why: "model: P(" + n.l + ")=" + Number(n.sc).toFixed(2) };
      if (!st.spans.some((x) => overlaps(x, h)) && !out.some((x) => overlaps(x, h))) out.push(h);
    }
    return sortSpans(out);
  }
  const suggested = (s) => s.src === "propagated" || s.src === "known";
  const uncertain = (s) => !String(s.src || "").startsWith("human:") && Number(s.sc) < uncertainBelow;

  // ------------------------------------------------------------ edits (local, undoable)
  function commit(next, activeAfter) {
    sortSpans(next);
    const same = (a, b) => sameLayer(a, b) && a.every((x, i) => x.src === b[i].src);
    if (same(next, st.spans)) return false;
    st.undo.push(st.spans);
    if (st.undo.length > 200) st.undo.shift();
    st.redo = [];
    st.spans = next;
    st.active = activeAfter || null;
    st.restore = null;
    afterEdit();
    return true;
  }
  function afterEdit() {
    writeStore(storeKey, { base: d.base, spans: st.spans, at: Date.now() });
    if (st.timer) clearTimeout(st.timer);
    st.timer = setTimeout(() => {
      st.timer = null;
      if (st.spans.map(keyOf).join("|") !== st.synced) send("draft");
    }, AUTOSAVE_MS);
    draw();
  }
  const human = () => "human:" + user;
  const find = (a) => st.spans.find((s) => a && s.s === a.s && s.e === a.e);

  function addSpan(start, end, label) {
    const sn = snap(start, end);
    if (!sn || !byName[label]) return;
    const span = { s: sn[0], e: sn[1], l: label, src: human(), sc: 1 };
    commit(st.spans.filter((s) => !overlaps(s, span)).concat([span]), { kind: "span", s: span.s, e: span.e });
    st.anchor = null;
  }
  function relabel(target, label) {
    if (!byName[label]) return;
    const span = { s: target.s, e: target.e, l: label, src: human(), sc: 1 };
    commit(st.spans.filter((s) => s !== target).concat([span]), { kind: "span", s: span.s, e: span.e });
  }
  function confirm(target) {
    const span = { s: target.s, e: target.e, l: target.l, src: human(), sc: 1 };
    commit(st.spans.filter((s) => s !== target).concat([span]), { kind: "span", s: span.s, e: span.e });
  }
  function remove(target) {
    commit(st.spans.filter((s) => s !== target), null);
  }
  function resize(target, edge) {
    // edge: "left-out" [ , "right-out" ] , "left-in" { , "right-in" }
    const i = tokenAt(target.s);
    let j = i;
    while (j < tokens.length && tokens[j][1] <= target.e) j++;
    let a = i, b = j - 1; // token range of the span
    if (edge === "right-out") b = Math.min(b + 1, tokens.length - 1);
    else if (edge === "left-out") a = Math.max(a - 1, 0);
    else if (edge === "right-in") b = b > a ? b - 1 : b;
    else if (edge === "left-in") a = a < b ? a + 1 : a;
    const span = { s: tokens[a][0], e: tokens[b][1], l: target.l, src: human(), sc: 1 };
    if (span.s === target.s && span.e === target.e) return;
    commit(st.spans.filter((s) => s !== target && !overlaps(s, span)).concat([span]), { kind: "span", s: span.s, e: span.e });
  }
  function undo() {
    if (!st.undo.length) return;
    st.redo.push(st.spans);
    st.spans = st.undo.pop();
    st.active = null;
    afterEdit();
  }
  function redo() {
    if (!st.redo.length) return;
    st.undo.push(st.spans);
    st.spans = st.redo.pop();
    st.active = null;
    afterEdit();
  }

  // ------------------------------------------------------------ DOM
  let root = parentElement.querySelector(":scope > .deid-review");
  if (!root) {
    root = el("div", "deid-review");
    parentElement.appendChild(root);
  }
  root.replaceChildren();
  root.setAttribute("data-doc", String(d.doc_id || ""));
  root.setAttribute("data-rev", String(d.rev || 0));

  const restoreBox = el("div", "deid-restore");
  const legend = el("div", "deid-legend");
  labels.forEach((lab, i) => {
    const item = el("span", "deid-legend-item");
    if (i < 9) item.appendChild(el("kbd", "", String(i + 1)));
    const sw = el("span", "deid-swatch");
    sw.style.background = lab.c;
    item.appendChild(sw);
    item.appendChild(document.createTextNode(lab.name));
    legend.appendChild(item);
  });
  const bar = el("div", "deid-bar");
  const note = el("div", "deid-note");
  note.setAttribute("tabindex", "0");
  note.setAttribute("aria-label", "Note text");
  const menu = el("div", "deid-menu");
  menu.hidden = true;
  const palette = el("div", "deid-palette");
  palette.hidden = true;
  const help = el("div", "deid-help");
  help.hidden = true;
  const actions = el("div", "deid-menu-row");
  const hint = el("div", "deid-hint",
    "? keys - select text (mouse or Shift+arrows) and press 1-9 or / - Tab: next span - " +
    "n/p: next thing to check - Enter: accept suggestion - A: accept note");
  root.append(restoreBox, legend, bar, note, actions, hint, menu, palette, help);

  function button(text, onClick, cls) {
    const b = el("button", "deid-btn" + (cls ? " " + cls : ""), text);
    b.type = "button";
    b.addEventListener("mousedown", (e) => e.preventDefault()); // keep the text selection
    b.addEventListener("click", (e) => {
      e.stopPropagation();
      onClick();
    });
    return b;
  }

  if (!d.readonly) {
    actions.append(
      button("Accept & next (A)", () => send("accept"), "deid-current"),
      button("Save", () => send("save")),
      button("Skip (S)", () => send("skip")),
      button("Undo (U)", undo),
      button("Redo (Shift+U)", redo),
      button("Back (B)", () => send("back"))
    );
  }

  function selection() {
    if (st.anchor === null) return null;
    const a = Math.min(st.anchor, st.cursor), b = Math.max(st.anchor, st.cursor);
    return { s: tokens[a][0], e: tokens[b][1] };
  }

  function draw() {
    const hs = hints();
    st.hints = hs;
    const sel = selection();
    const cur = tokens.length ? { s: tokens[st.cursor][0], e: tokens[st.cursor][1] } : null;
    // cut points: spans, hints, selection, cursor
    const marks = st.spans.map((s) => ({ s: s.s, e: s.e, kind: "span", x: s }))
      .concat(hs.map((h) => ({ s: h.s, e: h.e, kind: "hint", x: h })));
    marks.sort((a, b) => a.s - b.s || a.e - b.e);
    const cuts = new Set([0, chars.length]);
    for (const m of marks) { cuts.add(m.s); cuts.add(m.e); }
    if (sel) { cuts.add(sel.s); cuts.add(sel.e); }
    if (cur) { cuts.add(cur.s); cuts.add(cur.e); }
    const points = Array.from(cuts).filter((p) => p >= 0 && p <= chars.length).sort((a, b) => a - b);
    note.replaceChildren();
    let mi = 0;
    let open = null; // current mark element and its range
    for (let k = 0; k + 1 < points.length; k++) {
      const a = points[k], b = points[k + 1];
      if (a === b) continue;
      while (mi < marks.length && marks[mi].e <= a) mi++;
      const m = mi < marks.length && marks[mi].s <= a && marks[mi].e >= b ? marks[mi] : null;
      let parent = note;
      if (m) {
        if (!open || open.m !== m) {
          const x = m.x;
          let node;
          const isActive = st.active && st.active.s === x.s && st.active.e === x.e && st.active.kind === m.kind;
          if (m.kind === "span") {
            const lab = byName[x.l] || { c: "#999999", fg: "#000000" };
            node = el("mark", "deid-span" + (uncertain(x) ? " deid-uncertain" : "") + (suggested(x) ? " deid-near" : "") + (isActive ? " deid-active" : ""));
            if (suggested(x)) {
              node.style.setProperty("--deid-c", lab.c);
              node.style.borderBottomColor = lab.c;
            } else {
              node.style.background = lab.c;
              node.style.color = lab.fg;
            }
            node.setAttribute("data-label", x.l);
            node.setAttribute("data-source", x.src || "");
            node.setAttribute("title", x.l + " " + Number(x.sc).toFixed(2) + (x.src ? " [" + x.src + "]" : "") +
              (suggested(x) ? " - suggested, Enter confirms" : uncertain(x) ? " - uncertain, check" : ""));
          } else {
            const lab = byName[x.l] || { c: "#d6336c" };
            node = el("span", "deid-near" + (isActive ? " deid-active" : ""));
            node.style.setProperty("--deid-c", lab.c);
            node.style.borderBottomColor = lab.c;
            node.setAttribute("data-label", x.l);
            node.setAttribute("title", "possible " + x.l + ": " + x.why + " - Enter accepts");
          }
          node.setAttribute("data-s", String(x.s));
          node.setAttribute("data-e", String(x.e));
          note.appendChild(node);
          open = { m, node };
        }
        parent = open.node;
      } else {
        open = null;
      }
      const piece = el("span", "deid-text", chars.slice(a, b).join(""));
      piece.setAttribute("data-s", String(a));
      piece.setAttribute("data-e", String(b));
      if (sel && a >= sel.s && b <= sel.e) piece.classList.add("deid-selected");
      if (cur && a >= cur.s && b <= cur.e) piece.classList.add("deid-cursor");
      parent.appendChild(piece);
      if (m && b === m.e && m.kind === "span") {
        const tag = el("span", "deid-tag", m.x.l);
        tag.setAttribute("aria-hidden", "true");
        parent.appendChild(tag);
      }
    }
    drawBar();
    drawRestore();
    drawMenu();
  }
  // status bar: live counts
  function drawBar() {
    const hs = st.hints || [];
    const nUnc = st.spans.filter(uncertain).length;
    const nSug = st.spans.filter(suggested).length;
    const dirty = !sameKeys(st.spans, originSet);
    bar.replaceChildren();
    const item = (name, value, test) => {
      const s = el("span", "");
      s.appendChild(document.createTextNode(name + " "));
      const b = el("b", "", String(value));
      if (test) b.setAttribute("data-testid", test);
      s.appendChild(b);
      bar.appendChild(s);
    };
    item("PHI spans", st.spans.length, "deid-count-spans");
    item("uncertain", nUnc, "deid-count-uncertain");
    item("possible misses", hs.length + nSug, "deid-count-misses");
    item("unsaved edits", dirty ? "yes" : "no", "deid-dirty");
    if (d.progress) bar.appendChild(el("span", "deid-progress", d.progress));
    if (st.leaving) bar.appendChild(el("span", "deid-saving", "saving: the next note opens when the server replies"));
    root.setAttribute("data-spans", String(st.spans.length));
    root.setAttribute("data-queued", String((d.next || []).length)); // next notes held in the browser
  }
  function sameKeys(spans, set) {
    return spans.length === set.size && spans.every((s) => set.has(keyOf(s)));
  }

  function drawRestore() {
    restoreBox.replaceChildren();
    restoreBox.hidden = !st.restore;
    if (!st.restore) return;
    const when = new Date(st.restore.at || Date.now()).toLocaleTimeString();
    restoreBox.appendChild(el("span", "", "Unsaved edits of this note from " + when + " (" +
      st.restore.spans.length + " spans) were kept in this browser. "));
    restoreBox.appendChild(button("Restore them", () => {
      const kept = st.restore;
      st.restore = null;
      commit(kept.spans.filter((s) => byName[s.l]).map((s) => Object.assign({}, s)), null);
    }, "deid-current"));
    restoreBox.appendChild(button("Discard", () => {
      st.restore = null;
      writeStore(storeKey, null);
      draw();
    }));
  }

  // ------------------------------------------------------------ menus
  function labelButtons(onPick, current) {
    const box = el("div", "deid-menu-labels");
    labels.forEach((lab, i) => {
      const b = button((i < 9 ? i + 1 + " " : "") + lab.name, () => onPick(lab.name),
        lab.name === current ? "deid-current" : "");
      b.style.borderLeft = "6px solid " + lab.c;
      box.appendChild(b);
    });
    return box;
  }
  let mouseSel = null; // {s, e, rect} from a mouse selection
  function drawMenu() {
    menu.replaceChildren();
    menu.hidden = true;
    if (d.readonly) return;
    const span = st.active && st.active.kind === "span" ? find(st.active) : null;
    if (mouseSel) {
      const s = mouseSel;
      menu.appendChild(el("div", "deid-menu-title", "Label selection (1-9, / for all labels)"));
      menu.appendChild(labelButtons((name) => { mouseSel = null; window.getSelection().removeAllRanges(); addSpan(s.s, s.e, name); }));
      place(s.rect);
    } else if (span && st.showMenu) {
      menu.appendChild(el("div", "deid-menu-title", "Relabel (1-9, /), Del: delete, [ ] grow, { } shrink, Enter: confirm"));
      menu.appendChild(labelButtons((name) => relabel(span, name), span.l));
      const row = el("div", "deid-menu-row");
      row.append(
        button("[ grow left", () => resize(span, "left-out")),
        button("grow right ]", () => resize(span, "right-out")),
        button("{ shrink left", () => resize(span, "left-in")),
        button("shrink right }", () => resize(span, "right-in")),
        button("delete", () => remove(span), "deid-danger")
      );
      menu.appendChild(row);
      const node = note.querySelector('mark[data-s="' + span.s + '"]');
      if (node) place(node.getBoundingClientRect());
    }
  }
  function place(rect) {
    const host = root.getBoundingClientRect();
    menu.style.left = Math.max(0, rect.left - host.left) + "px";
    menu.style.top = rect.bottom - host.top + 4 + "px";
    menu.hidden = false;
  }

  function openPalette() {
    st.palette = { query: "" };
    palette.replaceChildren();
    palette.hidden = false;
    const input = el("input", "");
    input.setAttribute("placeholder", "Label: type to filter, Enter to apply, Esc to close");
    input.setAttribute("aria-label", "Label palette");
    const list = el("div", "deid-palette-list");
    palette.append(input, list);
    const matches = () => {
      const q = input.value.trim().toUpperCase();
      const all = labels.map((l) => l.name);
      const pre = all.filter((n) => n.startsWith(q));
      const sub = all.filter((n) => !n.startsWith(q) && n.includes(q));
      return pre.concat(sub);
    };
    const render = () => {
      list.replaceChildren();
      matches().forEach((name, i) => {
        const item = el("div", "deid-palette-item" + (i === 0 ? " deid-hit" : ""), name);
        item.style.borderLeft = "6px solid " + byName[name].c;
        item.addEventListener("mousedown", (e) => { e.preventDefault(); pick(name); });
        list.appendChild(item);
      });
    };
    const close = () => { st.palette = null; palette.hidden = true; palette.replaceChildren(); note.focus({ preventScroll: true }); };
    const pick = (name) => { close(); applyLabel(name); };
    input.addEventListener("input", render);
    input.addEventListener("keydown", (e) => {
      e.stopPropagation();
      if (e.key === "Escape") { e.preventDefault(); close(); }
      else if (e.key === "Enter") { e.preventDefault(); const m = matches(); if (m.length) pick(m[0]); }
    });
    render();
    input.focus();
  }

  function drawHelp() {
    help.replaceChildren();
    help.hidden = !st.help;
    if (!st.help) return;
    help.appendChild(el("div", "deid-menu-title", "Keyboard (? to close)"));
    const table = el("table", "");
    const rows = [
      ["1-9", "label the selection, or relabel the current span (first nine labels)"],
      ["/", "label palette: type to filter (\"zi\" then Enter: ZIP)"],
      ["← →", "move the token cursor"],
      ["Shift+← →", "grow a selection token by token"],
      ["Tab / Shift+Tab", "next / previous span"],
      ["n / p", "next / previous thing to check (uncertain span, possible miss)"],
      ["[ ]", "grow the current span left / right (repeatable)"],
      ["{ }", "shrink the current span from the left / right"],
      ["Enter", "accept the suggestion (possible miss, suggested or uncertain span)"],
      ["Delete", "remove the current span"],
      ["U / Ctrl+Z", "undo; Shift+U / Ctrl+Y redo"],
      ["A", "accept the note and open the next one"],
      ["B", "back to the previous note, reopened (undoes its accept)"],
      ["S", "skip the note"],
      ["Esc", "close menus, clear the selection"],
    ];
    for (const [k, v] of rows) {
      const tr = el("tr", "");
      const td = el("td", "");
      td.appendChild(el("kbd", "", k));
      tr.append(td, el("td", "", v));
      table.appendChild(tr);
    }
    help.appendChild(table);
  }

  // ------------------------------------------------------------ navigation helpers
  function focusItem(item, kind) {
    st.active = item ? { kind, s: item.s, e: item.e } : null;
    st.anchor = null;
    if (item) st.cursor = tokenAt(item.s);
    st.showMenu = false;
    draw();
    const node = item && note.querySelector('[data-s="' + item.s + '"]');
    if (node && node.scrollIntoView) node.scrollIntoView({ block: "nearest" });
  }
  function currentOffset() {
    if (st.active) return st.active.s;
    return tokens.length ? tokens[st.cursor][0] : 0;
  }
  function cycleSpans(dir) {
    if (!st.spans.length) return;
    const at = currentOffset();
    const list = st.spans;
    let target;
    if (dir > 0) target = list.find((s) => (st.active ? s.s > at : s.s >= at)) || list[0];
    else target = list.slice().reverse().find((s) => s.s < at) || list[list.length - 1];
    focusItem(target, "span");
  }
  function cycleChecks(dir) {
    const items = st.spans.filter((s) => uncertain(s) || suggested(s)).map((s) => ({ x: s, kind: "span" }))
      .concat((st.hints || []).map((h) => ({ x: h, kind: "hint" })));
    if (!items.length) return;
    items.sort((a, b) => a.x.s - b.x.s);
    const at = currentOffset();
    let target;
    if (dir > 0) target = items.find((i) => (st.active ? i.x.s > at : i.x.s >= at)) || items[0];
    else target = items.slice().reverse().find((i) => i.x.s < at) || items[items.length - 1];
    focusItem(target.x, target.kind);
  }
  function applyLabel(name) {
    const sel = mouseSel || selection();
    if (sel) {
      mouseSel = null;
      const s = window.getSelection();
      if (s) s.removeAllRanges();
      addSpan(sel.s, sel.e, name);
      return;
    }
    const span = st.active && st.active.kind === "span" ? find(st.active) : null;
    if (span) return relabel(span, name);
    const h = st.active && st.active.kind === "hint" ? (st.hints || []).find((x) => x.s === st.active.s && x.e === st.active.e) : null;
    if (h) return addSpan(h.s, h.e, name);
    if (tokens.length) addSpan(tokens[st.cursor][0], tokens[st.cursor][1], name);
  }
  function acceptSuggestion() {
    if (!st.active) return false;
    if (st.active.kind === "hint") {
      const h = (st.hints || []).find((x) => x.s === st.active.s && x.e === st.active.e);
      if (!h) return false;
      addSpan(h.s, h.e, h.l);
      return true;
    }
    const span = find(st.active);
    if (span && (suggested(span) || uncertain(span))) {
      confirm(span);
      return true;
    }
    return false;
  }

  // ------------------------------------------------------------ mouse
  function offsetOf(node, offset) {
    let piece = node.nodeType === 3 ? node.parentElement : node;
    if (piece && piece.classList && piece.classList.contains("deid-tag")) return Number(piece.parentElement.dataset.e);
    if (piece === note) {
      const kids = note.children;
      if (offset >= kids.length) return chars.length;
      return Number(kids[offset].dataset.s);
    }
    if (!piece || !piece.dataset || piece.dataset.s === undefined) return null;
    if (node.nodeType !== 3) return Number(offset > 0 ? piece.dataset.e : piece.dataset.s);
    return Number(piece.dataset.s) + Array.from(node.data.slice(0, offset)).length;
  }
  function readSelection() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const r = sel.getRangeAt(0);
    if (!note.contains(r.startContainer) || !note.contains(r.endContainer)) return null;
    const s = offsetOf(r.startContainer, r.startOffset);
    const e = offsetOf(r.endContainer, r.endOffset);
    if (s === null || e === null || e <= s) return null;
    return { s, e, rect: r.getBoundingClientRect() };
  }
  note.addEventListener("mouseup", () => {
    if (d.readonly) return;
    setTimeout(() => {
      const s = readSelection();
      if (s) {
        mouseSel = s;
        st.anchor = null;
        st.active = null;
        drawMenu();
      }
    }, 0);
  });
  note.addEventListener("click", (e) => {
    if (d.readonly) return;
    const sel = window.getSelection();
    if (sel && !sel.isCollapsed) return;
    mouseSel = null;
    const mark = e.target.closest ? e.target.closest("mark.deid-span, span.deid-near") : null;
    if (mark && note.contains(mark)) {
      const s = Number(mark.dataset.s), en = Number(mark.dataset.e);
      const kind = mark.tagName.toLowerCase() === "mark" ? "span" : "hint";
      st.active = { kind, s, e: en };
      st.cursor = tokenAt(s);
      st.showMenu = kind === "span";
      draw();
    } else {
      const at = sel && sel.rangeCount ? offsetOf(sel.anchorNode, sel.anchorOffset) : null;
      if (at !== null && at !== undefined) st.cursor = tokenAt(at);
      st.active = null;
      st.showMenu = false;
      draw();
    }
  });

  // ------------------------------------------------------------ keyboard
  function onKey(e) {
    if (!document.body.contains(root) || d.readonly) return;
    const t = e.target;
    const tag = t && t.tagName ? t.tagName.toLowerCase() : "";
    if (tag === "input" || tag === "textarea" || tag === "select" || (t && t.isContentEditable)) return;
    if (e.altKey || e.metaKey) return;
    const k = e.key;
    if (st.leaving) return; // accepted or skipped: nothing more to edit here
    const stop = () => { e.preventDefault(); e.stopPropagation(); };
    if (e.ctrlKey) {
      if (k === "z" || k === "Z") { stop(); if (e.shiftKey) redo(); else undo(); }
      else if (k === "y" || k === "Y") { stop(); redo(); }
      return;
    }
    if (k === "?") { stop(); st.help = !st.help; drawHelp(); return; }
    if (k === "Escape") {
      mouseSel = null; st.anchor = null; st.active = null; st.help = false; st.showMenu = false;
      drawHelp(); draw(); return;
    }
    if (k >= "1" && k <= "9") {
      const lab = labels[Number(k) - 1];
      if (lab) { stop(); if (!mouseSel) mouseSel = readSelection(); applyLabel(lab.name); }
      return;
    }
    if (k === "/") { stop(); if (!mouseSel) mouseSel = readSelection(); openPalette(); return; }
    // Tab, Enter and arrows keep their usual meaning on the page's own buttons and links.
    const mine = !t || t === document.body || root.contains(t);
    if (k === "Tab") { if (mine) { stop(); cycleSpans(e.shiftKey ? -1 : 1); } return; }
    if (k === "n" || k === "N") { stop(); cycleChecks(1); return; }
    if (k === "p" || k === "P") { stop(); cycleChecks(-1); return; }
    if (k === "ArrowRight" || k === "ArrowLeft") {
      if (!tokens.length || !mine) return;
      stop();
      mouseSel = null;
      if (e.shiftKey && st.anchor === null) st.anchor = st.cursor;
      if (!e.shiftKey) st.anchor = null;
      st.cursor = Math.max(0, Math.min(tokens.length - 1, st.cursor + (k === "ArrowRight" ? 1 : -1)));
      st.active = null;
      st.showMenu = false;
      draw();
      return;
    }
    const span = st.active && st.active.kind === "span" ? find(st.active) : null;
    if (span) {
      if (k === "Delete" || k === "Backspace") { stop(); remove(span); return; }
      if (k === "]") { stop(); resize(span, "right-out"); return; }
      if (k === "[") { stop(); resize(span, "left-out"); return; }
      if (k === "}") { stop(); resize(span, "right-in"); return; }
      if (k === "{") { stop(); resize(span, "left-in"); return; }
    }
    if (k === "Enter") { if (mine && acceptSuggestion()) stop(); return; }
    if (k === "a" || k === "A") { stop(); send("accept"); return; }
    if (k === "s" || k === "S") { stop(); send("skip"); return; }
    if (k === "b" || k === "B") { stop(); send("back"); return; }
    if (k === "u" || k === "U") { stop(); if (e.shiftKey) redo(); else undo(); return; }
  }

  if (W.keys[slot]) document.removeEventListener("keydown", W.keys[slot], true);
  W.keys[slot] = onKey;
  document.addEventListener("keydown", onKey, true);

  if (st.scrollTo !== null && st.scrollTo !== undefined && tokens.length) {
    st.cursor = tokenAt(st.scrollTo);
    st.scrollTo = null;
    draw();
    const node = note.querySelector(".deid-cursor");
    if (node && node.scrollIntoView) node.scrollIntoView({ block: "center" });
  } else {
    draw();
  }
  drawHelp();
  root.setAttribute("data-ready", String(d.rev));
  root.setAttribute("data-ahead", st.ahead ? "1" : "0"); // "0" once the server holds it too
  root.setAttribute("data-opened", st.ahead ? "ahead" : "server"); // where this note came from first
  if (d.focus) note.focus({ preventScroll: true });

  // What the entry point needs to reconcile new server data with this note.
  W.live[slot] = {
    doc: String(d.doc_id),
    parent: parentElement,
    root,
    extend(queued) {
      const i = queued.findIndex((n) => String(n.doc_id) === String(d.doc_id));
      const after = i >= 0 ? queued.slice(i + 1) : [];
      if (after.length > (d.next || []).length) d.next = after;
    },
    moveOn(payload) {
      st.leaving = false;
      if ((d.next || []).length) moveOn(payload);
      else { st.leaving = true; drawBar(); } // no next note known: the server claims one
    },
    // New server data for this note: take it without a redraw when it is the layer on screen
    // (the same revision, or the note shown ahead now opened on the server, unchanged).
    adopt(nd) {
      if (String(nd.doc_id) !== String(d.doc_id)) return false;
      if (nd.rev !== st.rev) {
        const theirs = sortSpans((nd.spans || []).map((x) => Object.assign({}, x)));
        if (!(st.ahead && nd.base === st.base && sameLayer(theirs, st.initial))) return false;
        st.rev = nd.rev;
        st.ahead = false;
      }
      const hintsBefore = JSON.stringify([d.known, d.near, d.numeric, d.origin]);
      Object.keys(d).forEach((k) => { if (!(k in nd)) delete d[k]; });
      Object.assign(d, nd, { focus: false });
      root.setAttribute("data-rev", String(d.rev));
      root.setAttribute("data-ready", String(d.rev));
      root.setAttribute("data-ahead", "0");
      if (JSON.stringify([d.known, d.near, d.numeric, d.origin]) !== hintsBefore) {
        originSet = new Set((d.origin || []).map(keyOf));
        numeric.clear();
        (d.numeric || []).forEach((t) => numeric.add(t[0] + ":" + t[1]));
        draw();
      } else {
        drawBar();
      }
      return true;
    },
  };
}
