// Review editor for deid-workbench (Streamlit components v2, no build step).
//
// Security: note text and labels are untrusted. They are only ever placed with
// textContent / setAttribute, never innerHTML. Offsets sent to Python are
// Unicode code points (Python string offsets), not UTF-16 units.
//
// Streamlit calls this function again whenever `data` changes without running
// the previous cleanup, so global listeners are kept on window and replaced.

const cp = (s) => Array.from(s).length;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

export default function (component) {
  const { data, setTriggerValue, parentElement } = component;
  const d = data || {};
  const labels = d.labels || [];
  const segments = d.segments || [];
  let seq = 0;
  const send = (action) => {
    seq += 1;
    setTriggerValue("action", Object.assign({ doc_id: d.doc_id, rev: d.rev, seq: Date.now() + seq }, action));
  };

  let root = parentElement.querySelector(":scope > .deid-review");
  if (!root) {
    root = el("div", "deid-review");
    parentElement.appendChild(root);
  }
  root.replaceChildren();
  root.setAttribute("data-doc", String(d.doc_id || ""));
  root.setAttribute("data-rev", String(d.rev || 0));

  // Legend: numbered labels (keys 1-9) that are also buttons for the open selection.
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
  root.appendChild(legend);

  const note = el("div", "deid-note");
  note.setAttribute("tabindex", "0");
  for (const seg of segments) {
    let node;
    if (seg.k === "span") {
      node = el("mark", "deid-span" + (seg.u ? " deid-uncertain" : ""));
      node.style.background = seg.c;
      node.style.color = seg.fg;
      node.appendChild(document.createTextNode(seg.t));
      const tag = el("span", "deid-tag", seg.l);
      tag.setAttribute("aria-hidden", "true");
      node.appendChild(tag);
      node.setAttribute("data-label", seg.l);
    } else if (seg.k === "near") {
      node = el("span", "deid-near", seg.t);
      node.style.borderBottomColor = seg.c;
      node.setAttribute("data-label", seg.l);
    } else {
      node = el("span", "deid-text", seg.t);
    }
    node.setAttribute("data-s", String(seg.s));
    node.setAttribute("data-e", String(seg.e));
    if (seg.title) node.setAttribute("title", seg.title);
    note.appendChild(node);
  }
  root.appendChild(note);

  const menu = el("div", "deid-menu");
  menu.hidden = true;
  root.appendChild(menu);
  const status = el("div", "deid-hint",
    "Select text and press 1-9 (or pick a label) - click a highlight to change it - " +
    "A: accept & next, S: skip, U: undo");
  root.appendChild(status);

  let pending = null; // {kind: "select", start, end} | {kind: "span", start, end, label}

  function closeMenu() {
    menu.hidden = true;
    menu.replaceChildren();
    pending = null;
    note.querySelectorAll(".deid-active").forEach((n) => n.classList.remove("deid-active"));
  }

  function placeMenu(rect) {
    const host = root.getBoundingClientRect();
    menu.style.left = Math.max(0, rect.left - host.left) + "px";
    menu.style.top = rect.bottom - host.top + 4 + "px";
    menu.hidden = false;
  }

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

  // Map a DOM boundary point to a code-point offset in the note.
  function offsetOf(node, offset, isEnd) {
    if (node === note) {
      const kids = note.children;
      if (offset >= kids.length) return kids.length ? Number(kids[kids.length - 1].dataset.e) : 0;
      return Number(kids[offset].dataset.s);
    }
    let seg = node.nodeType === 3 ? node.parentElement : node;
    if (seg && seg.classList && seg.classList.contains("deid-tag")) {
      return Number(seg.parentElement.dataset.e);
    }
    while (seg && seg.parentElement !== note) seg = seg.parentElement;
    if (!seg) return null;
    if (node.nodeType !== 3) return Number(isEnd && offset > 0 ? seg.dataset.e : seg.dataset.s);
    return Number(seg.dataset.s) + cp(node.data.slice(0, offset));
  }

  function readSelection() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const r = sel.getRangeAt(0);
    if (!note.contains(r.startContainer) || !note.contains(r.endContainer)) return null;
    const start = offsetOf(r.startContainer, r.startOffset, false);
    const end = offsetOf(r.endContainer, r.endOffset, true);
    if (start === null || end === null || end <= start) return null;
    return { start, end, rect: r.getBoundingClientRect() };
  }

  function openSelectionMenu(s) {
    closeMenu();
    pending = { kind: "select", start: s.start, end: s.end };
    menu.appendChild(el("div", "deid-menu-title", "Label selection (key 1-9)"));
    menu.appendChild(labelButtons((name) => {
      send({ type: "add", start: s.start, end: s.end, label: name });
      closeMenu();
    }));
    placeMenu(s.rect);
  }

  function openSpanMenu(mark) {
    closeMenu();
    const start = Number(mark.dataset.s), end = Number(mark.dataset.e);
    const label = mark.dataset.label;
    pending = { kind: "span", start, end, label };
    mark.classList.add("deid-active");
    menu.appendChild(el("div", "deid-menu-title", "Relabel (1-9), Del: delete, [ ]: extend"));
    menu.appendChild(labelButtons((name) => {
      send({ type: "relabel", start, end, label: name });
      closeMenu();
    }, label));
    const row = el("div", "deid-menu-row");
    row.appendChild(button("< extend", () => { send({ type: "extend", start, end, direction: "prev" }); closeMenu(); }));
    row.appendChild(button("extend >", () => { send({ type: "extend", start, end, direction: "next" }); closeMenu(); }));
    row.appendChild(button("shrink <", () => { send({ type: "shrink", start, end, side: "end" }); closeMenu(); }));
    row.appendChild(button("> shrink", () => { send({ type: "shrink", start, end, side: "start" }); closeMenu(); }));
    row.appendChild(button("delete", () => { send({ type: "delete", start, end }); closeMenu(); }, "deid-danger"));
    menu.appendChild(row);
    placeMenu(mark.getBoundingClientRect());
  }

  note.addEventListener("mouseup", () => {
    if (d.readonly) return;
    setTimeout(() => {
      const s = readSelection();
      if (s) openSelectionMenu(s);
    }, 0);
  });
  note.addEventListener("click", (e) => {
    if (d.readonly) return;
    const sel = window.getSelection();
    if (sel && !sel.isCollapsed) return;
    const mark = e.target.closest ? e.target.closest("mark.deid-span") : null;
    if (mark && note.contains(mark)) openSpanMenu(mark);
    else closeMenu();
  });

  function onKey(e) {
    if (!document.body.contains(root) || d.readonly) return;
    const t = e.target;
    const tag = t && t.tagName ? t.tagName.toLowerCase() : "";
    if (tag === "input" || tag === "textarea" || tag === "select" || (t && t.isContentEditable)) return;
    if (e.altKey || e.metaKey) return;
    const k = e.key;
    if (e.ctrlKey) {
      if (k === "z" || k === "Z") { e.preventDefault(); send({ type: "undo" }); }
      return;
    }
    if (k >= "1" && k <= "9") {
      const lab = labels[Number(k) - 1];
      if (!lab) return;
      const s = readSelection();
      if (s) { e.preventDefault(); send({ type: "add", start: s.start, end: s.end, label: lab.name }); closeMenu(); return; }
      if (pending && pending.kind === "span") {
        e.preventDefault(); send({ type: "relabel", start: pending.start, end: pending.end, label: lab.name }); closeMenu();
      }
      return;
    }
    if (pending && pending.kind === "span") {
      if (k === "Delete" || k === "Backspace") { e.preventDefault(); send({ type: "delete", start: pending.start, end: pending.end }); closeMenu(); return; }
      if (k === "]") { e.preventDefault(); send({ type: "extend", start: pending.start, end: pending.end, direction: "next" }); closeMenu(); return; }
      if (k === "[") { e.preventDefault(); send({ type: "extend", start: pending.start, end: pending.end, direction: "prev" }); closeMenu(); return; }
    }
    if (k === "Escape") { closeMenu(); return; }
    if (k === "a" || k === "A") { e.preventDefault(); send({ type: "accept" }); return; }
    if (k === "s" || k === "S") { e.preventDefault(); send({ type: "skip" }); return; }
    if (k === "u" || k === "U") { e.preventDefault(); send({ type: "undo" }); return; }
  }

  window.__deidReviewKeys = window.__deidReviewKeys || {};
  const slot = String(component.key || "review");
  if (window.__deidReviewKeys[slot]) document.removeEventListener("keydown", window.__deidReviewKeys[slot]);
  window.__deidReviewKeys[slot] = onKey;
  document.addEventListener("keydown", onKey);

  return () => {
    if (window.__deidReviewKeys[slot] === onKey) {
      document.removeEventListener("keydown", onKey);
      delete window.__deidReviewKeys[slot];
    }
  };
}
