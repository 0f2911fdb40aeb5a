"""Review one note: highlighted PHI, mouse and keyboard corrections, optimistic save."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import streamlit as st

from deid_core.engine.tokenize import tokenize
from deid_core.errors import DeidError
from deid_core.schemes import load_scheme
from deid_core.spans import Document
from deid_core.store import repository as repo
from deid_core.ui.component import editor_payload, review_editor
from deid_core.ui.editing import (
    EditRejected,
    EditState,
    Target,
    apply_action,
    apply_changes,
    diff_layers,
    plan_apply_all,
    undo,
)
from deid_core.ui.learning import maybe_retrain
from deid_core.ui.queue import claim_next_note, patient_document_ids
from deid_core.ui.render import DEFAULT_UNCERTAIN_BELOW, render_legend_html, shortcut_order
from deid_core.ui.resources import guard, model_at
from deid_core.ui.review import (
    ModelView,
    encoded_for,
    follow_model,
    hints_for,
    model_view,
    uncertain_count,
)
from deid_core.ui.safe_text import md
from deid_core.ui.session import flash

ctx = guard("review")
project = ctx.need_project()
state = st.session_state
user = ctx.user.username
scheme = load_scheme(project.scheme)
labels = shortcut_order(scheme.names, project.scheme, project.settings.get("shortcut_labels"))
bias = float(project.settings.get("bias", 0.0))
uncertain_below = float(project.settings.get("uncertain_below", DEFAULT_UNCERTAIN_BELOW))


def claim_next() -> None:
    layers = claim_next_note(ctx.engine, project, user)
    state["current_doc"] = layers.doc_id if layers is not None else None
    if layers is None:
        flash(state, "info", "Nothing left to review in this project.")


doc_id = state.get("current_doc")
if doc_id is None:
    st.title("Review")
    st.write("No note is open.")
    if st.button("Review next", type="primary", key="review_next_empty"):
        claim_next()
        st.rerun()
    st.stop()

try:
    layers = repo.get_document(ctx.engine, int(doc_id))
except DeidError as exc:
    state["current_doc"] = None
    st.error(str(exc))
    st.stop()
if layers.project_id != project.id:
    state["current_doc"] = None
    st.rerun()

doc = layers.document
opened = state["opened"].setdefault(
    layers.doc_id, {"version": layers.version, "at": time.time(), "draft_id": None}
)


def view_for(document: Document, prediction: repo.PredictionLayer | None) -> ModelView:
    """What the reviewer starts from.

    A prediction stored by the active model is re-decoded live at the
    project's bias (so a bias change shows at once, with near misses); a
    prediction from elsewhere (an import, an older model) is shown as stored,
    with the active model's near misses and extra spans as hints.
    """
    live: ModelView | None = None
    mv = repo.active_model_version(ctx.engine, project.name)
    if mv is not None and Path(mv.artifact_path).is_dir():
        try:
            model = model_at(mv.artifact_path)
            bare = Document(document.id, document.text)
            live = model_view(model, encoded_for(state["encoded"], model, bare), bias)
        except DeidError as exc:
            st.warning(f"The active model could not be used: {md(exc)}")
    if prediction is not None and (live is None or prediction.model_version != live.model_version):
        return ModelView(prediction.spans, hints_for(prediction.spans, live) if live else (),
                         prediction.logprob, prediction.logprob_norm, prediction.model_version,
                         prediction.bias)
    if live is not None:
        return live
    return ModelView((), (), None, None, None, bias)


view = view_for(doc, layers.prediction)
reviewed = doc.spans if layers.version > 0 else None
edit: EditState = follow_model(state["drafts"].get(layers.doc_id), view.spans, reviewed)
state["drafts"][layers.doc_id] = edit
if not edit.dirty and not edit.can_undo and opened["version"] != layers.version:
    opened["version"] = layers.version  # no edits of ours yet: just follow the newer version
tokens = tokenize(doc.text, project.lang).tokens


def set_edit(new: EditState) -> None:
    state["drafts"][layers.doc_id] = new
    state["editor_rev"] += 1


def save(and_next: bool) -> None:
    started = datetime.fromtimestamp(opened["at"], tz=timezone.utc)
    result = repo.save_review(
        ctx.engine, layers.doc_id, user, edit.spans, opened["version"],
        started_at=started, draft_id=opened.get("draft_id"),
    )
    if result.ok:
        state["drafts"].pop(layers.doc_id, None)
        state["opened"].pop(layers.doc_id, None)
        state["conflict"] = None
        summary = ", ".join(f"{n} {k}" for k, n in sorted(result.decisions.items())) or "no spans"
        flash(state, "success", f"Saved note {doc.id} (version {result.version}): {summary}.")
        if maybe_retrain(ctx.engine, project.name, user):
            flash(state, "info", "Enough new reviews: the model is retraining in the background.")
        if and_next:
            claim_next()
    else:
        state["conflict"] = result
    state["editor_rev"] += 1


def skip() -> None:
    repo.set_status(ctx.engine, layers.doc_id, "skipped", actor=user)
    state["drafts"].pop(layers.doc_id, None)
    state["opened"].pop(layers.doc_id, None)
    flash(state, "info", f"Skipped note {doc.id}.")
    claim_next()


# ---------------------------------------------------------------- header
st.title(f"Note {md(doc.id)}")
meta = [f"status **{layers.status}**", f"version {layers.version}"]
if doc.meta.get("patient_id"):
    meta.append(f"patient {md(doc.meta['patient_id'])}")
if view.model_version:
    meta.append(f"model {view.model_version} at bias {view.bias:+.2f}")
if view.logprob is not None:
    meta.append(f"log P {view.logprob:.2f} ({view.logprob_per_token:.3f}/token)")
if layers.assigned_to and layers.assigned_to != user:
    meta.append(f"assigned to {layers.assigned_to}")
st.caption(" · ".join(meta))

conflict = state.get("conflict")
if conflict is not None and conflict.doc_id == layers.doc_id:
    st.error(f"Not saved: {md(conflict.message)}.", icon=":material/warning:")
    theirs = diff_layers(conflict.spans, doc.spans)
    st.caption(
        f"Their version differs from your edits by {len(theirs['added'])} span(s) you do not"
        f" have and {len(theirs['removed'])} of yours they do not have. Your edits are still"
        " shown below and are stored as a draft."
    )
    c1, c2 = st.columns(2)
    if c1.button("Keep my edits and save over their version", key="reapply", type="primary"):
        state["opened"][layers.doc_id] = {"version": conflict.current_version, "at": opened["at"],
                                         "draft_id": conflict.draft_id}
        state["conflict"] = None
        st.rerun()
    if c2.button("Discard my edits and load their version", key="discard"):
        repo.discard_draft(ctx.engine, conflict.draft_id, actor=user)
        state["drafts"].pop(layers.doc_id, None)
        state["opened"].pop(layers.doc_id, None)
        state["conflict"] = None
        st.rerun()
else:
    stored = [d for d in repo.list_drafts(ctx.engine, doc_id=layers.doc_id, author=user)]
    if stored and not edit.dirty:
        d = stored[0]
        st.warning(f"You have an unsaved draft of this note from a save conflict ({len(d.spans)} spans).")
        if st.button("Load my draft", key="load_draft"):
            set_edit(EditState(tuple(d.spans), (edit.spans,), edit.origin))
            state["opened"][layers.doc_id] = {"version": layers.version, "at": opened["at"],
                                             "draft_id": d.id}
            st.rerun()

m1, m2, m3, m4 = st.columns(4)
m1.metric("PHI spans", len(edit.spans))
m2.metric("Uncertain", uncertain_count(edit.spans, uncertain_below),
          help=f"Spans whose marginal probability is below {uncertain_below:.2f} (dashed red outline)")
open_hints = [n for n in view.near_misses if not any(n.overlaps(s) for s in edit.spans)]
m3.metric("Possible misses", len(open_hints),
          help="Tokens the model left out with a non-trivial PHI probability (dotted underline)")
m4.metric("Unsaved edits", "yes" if edit.dirty else "no")

b1, b2, b3, b4, b5 = st.columns(5)
if b1.button("Accept & next (A)", type="primary", key="save_next", width="stretch"):
    save(and_next=True)
    st.rerun()
if b2.button("Save", key="save", width="stretch"):
    save(and_next=False)
    st.rerun()
if b3.button("Skip (S)", key="skip", width="stretch"):
    skip()
    st.rerun()
if b4.button("Undo (U)", key="undo", disabled=not edit.can_undo, width="stretch"):
    set_edit(undo(edit))
    st.rerun()
if b5.button("Release", key="release", width="stretch",
             help="Give the note back to the queue without saving"):
    repo.release(ctx.engine, layers.doc_id, user)
    state["drafts"].pop(layers.doc_id, None)
    state["opened"].pop(layers.doc_id, None)
    state["current_doc"] = None
    st.switch_page("pages/queue.py")

# ---------------------------------------------------------------- the note
payload = editor_payload(
    doc_id=str(layers.doc_id), rev=int(state["editor_rev"]), text=doc.text, spans=edit.spans,
    labels=labels, colours=scheme.colours(), near_misses=view.near_misses,
    uncertain_below=uncertain_below,
)
action = review_editor(payload, key="review_editor")
if action and str(action.get("doc_id")) == str(layers.doc_id):
    kind = action.get("type")
    if kind == "accept":
        save(and_next=True)
    elif kind == "skip":
        skip()
    else:
        try:
            set_edit(apply_action(edit, action, tokens, user, labels))
        except EditRejected as exc:
            flash(state, "warning", f"Edit not applied: {exc}")
    st.rerun()

with st.expander("Legend"):
    st.html(render_legend_html(labels, scheme, numbered=True))

# ---------------------------------------------------------------- apply to all
with st.expander("Apply to all identical strings"):
    choices = {f"{doc.text[s.start:s.end]}  [{s.label}]": s for s in edit.spans}
    pick = st.selectbox("From a span of this note", ["(type a string)", *choices], key="aa_pick")
    if pick != "(type a string)":
        needle, default_label = doc.text[choices[pick].start:choices[pick].end], choices[pick].label
    else:
        needle = st.text_input("String", key="aa_string")
        default_label = labels[0]
    a1, a2, a3 = st.columns(3)
    label = a1.selectbox("Label", labels, index=labels.index(default_label)
                         if default_label in labels else 0, key="aa_label")
    mode = a2.radio("Action", ["add", "remove"], horizontal=True, key="aa_action")
    scopes = ["this note"] + (["this patient's notes"] if doc.meta.get("patient_id") else [])
    scope = a3.radio("Where", scopes, horizontal=True, key="aa_scope")
    if st.button("Preview", key="aa_preview", disabled=not needle):
        targets = [Target(str(layers.doc_id), doc.text, tokens, edit.spans)]
        versions = {str(layers.doc_id): layers.version}
        if scope != "this note":
            for other_id in patient_document_ids(ctx.engine, project.id, str(doc.meta["patient_id"])):
                if other_id == layers.doc_id:
                    continue
                other = repo.get_document(ctx.engine, other_id)
                other_view = view_for(other.document, other.prediction)
                other_edit = follow_model(state["drafts"].get(other_id), other_view.spans,
                                          other.document.spans if other.version > 0 else None)
                targets.append(Target(str(other_id), other.document.text,
                                      tokenize(other.document.text, project.lang).tokens,
                                      other_edit.spans))
                versions[str(other_id)] = other.version
                state["drafts"][other_id] = other_edit
        changes = plan_apply_all(targets, needle, label, mode)
        texts = {t.doc_id: t.text for t in targets}
        state["apply_all_plan"] = {"source": layers.doc_id, "changes": changes,
                                   "versions": versions, "texts_ids": list(texts)}
        preview_rows = []
        for c in changes:
            text = texts[c.doc_id]
            left = text[max(0, c.start - 25):c.start].replace("\n", " ")
            right = text[c.end:c.end + 25].replace("\n", " ")
            preview_rows.append({"note": c.doc_id, "offset": f"{c.start}..{c.end}", "change": c.kind,
                                 "label": c.label, "replaces": len(c.replaces),
                                 "context": f"…{left}[{text[c.start:c.end]}]{right}…"})
        state["apply_all_preview"] = preview_rows
    plan = state.get("apply_all_plan")
    if plan and plan["source"] == layers.doc_id:
        rows = state.get("apply_all_preview") or []
        if not rows:
            st.info("Nothing would change.")
        else:
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
            n_docs = len({r["note"] for r in rows})
            if st.button(f"Apply {len(rows)} change(s) in {n_docs} note(s)", type="primary",
                         key="aa_apply"):
                for target_id in {c.doc_id for c in plan["changes"]}:
                    mine = [c for c in plan["changes"] if c.doc_id == target_id]
                    tid = int(target_id)
                    base = state["drafts"].get(tid) if tid != layers.doc_id else edit
                    if base is None:
                        continue
                    state["drafts"][tid] = apply_changes(base, mine, user)
                    state["opened"].setdefault(tid, {"version": plan["versions"][target_id],
                                                     "at": time.time(), "draft_id": None})
                state["apply_all_plan"] = None
                state["editor_rev"] += 1
                others = n_docs - (1 if any(r["note"] == str(layers.doc_id) for r in rows) else 0)
                flash(state, "success",
                      f"Applied {len(rows)} change(s)."
                      + (f" {others} other note(s) now hold unsaved edits, saved when you review them."
                         if others else ""))
                st.rerun()
