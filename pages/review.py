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
    apply_changes,
    diff_layers,
    layer_from_browser,
    plan_apply_all,
)
from deid_core.ui.learning import maybe_retrain
from deid_core.ui.queue import claim_next_note, hold_ahead, patient_document_ids, progress_numbers
from deid_core.ui.render import (
    DEFAULT_UNCERTAIN_BELOW,
    page_html,
    render_legend_html,
    render_marks_legend_html,
    shortcut_order,
)
from deid_core.ui.resources import guard, model_at
from deid_core.ui.review import (
    ModelView,
    encoded_for,
    follow_model,
    hints_for,
    model_view,
    numeric_context_tokens,
    pace_text,
    patient_phi_strings,
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


# ?doc=<id>[&offset=<n>] opens a note (links from the Export page; a reload keeps the note).
asked = st.query_params.get("doc")
if asked is not None and asked.isdigit() and asked != state.get("doc_param"):
    state["current_doc"] = int(asked)  # a link or a reload, not the note we showed last
offset_param = st.query_params.get("offset")
focus_offset = int(offset_param) if offset_param and offset_param.isdigit() else None
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
    st.query_params.pop("doc", None)
    st.rerun()
st.query_params["doc"] = state["doc_param"] = str(layers.doc_id)

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


def starting_edit(note: repo.DocumentLayers, note_view: ModelView) -> tuple[EditState, EditState | None]:
    """(the layer to show, the session's earlier edit state of the note or None)."""
    previous = state["drafts"].get(note.doc_id)
    shown = follow_model(previous, note_view.spans, note.document.spans if note.version > 0 else None)
    if previous is None:
        # A lost session (reload, closed tab, another machine) left an autosaved draft of this
        # version: carry on from it.
        autosaved = [d for d in repo.list_drafts(ctx.engine, doc_id=note.doc_id, author=user)
                     if d.reason == "autosave" and d.base_version == note.version]
        if autosaved:
            shown = EditState(tuple(autosaved[0].spans), (shown.spans,), shown.origin)
    return shown, previous


view = view_for(doc, layers.prediction)
edit, previous_edit = starting_edit(layers, view)
if previous_edit is not None and edit is not previous_edit:
    state["editor_rev"] += 1  # the server changed the layer (bias, model): the browser follows
state["drafts"][layers.doc_id] = edit
# The browser may hold edits the server has not heard of yet, so the version a save is
# based on never moves silently: a save over a newer version is a conflict, handled below.
tokens = tokenize(doc.text, project.lang).tokens


def set_edit(new: EditState) -> None:
    state["drafts"][layers.doc_id] = new
    state["editor_rev"] += 1


def save(and_next: bool, shown: object = None) -> None:
    started = datetime.fromtimestamp(opened["at"], tz=timezone.utc)
    edit = state["drafts"][layers.doc_id]
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
        state["session_reviews"].append(round(time.time() - opened["at"], 1))
        state["review_history"] = [*state["review_history"][-49:], layers.doc_id]
        if maybe_retrain(ctx.engine, project.name, user):
            flash(state, "info", "Enough new reviews: the model is retraining in the background.")
        if and_next:
            open_next(shown)
    else:
        state["conflict"] = result
    state["editor_rev"] += 1


def back() -> None:
    """Reopen the note accepted just before this one (undoing its accept)."""
    history = state["review_history"]
    if not history:
        flash(state, "info", "No earlier note in this session to go back to.")
        return
    previous = history[-1]
    if not repo.reopen(ctx.engine, previous, user):
        flash(state, "warning", "The previous note was saved or taken by someone else since:"
                                " open it from the queue.")
        return
    state["review_history"] = history[:-1]
    state["drafts"].pop(previous, None)
    state["opened"].pop(previous, None)
    state["current_doc"] = previous
    flash(state, "info", "Reopened the previous note: accept it again when it is right.")


def skip(shown: object = None) -> None:
    repo.set_status(ctx.engine, layers.doc_id, "skipped", actor=user)
    state["drafts"].pop(layers.doc_id, None)
    state["opened"].pop(layers.doc_id, None)
    flash(state, "info", f"Skipped note {doc.id}.")
    open_next(shown)


def open_next(shown_id: object) -> None:
    """Open the note the browser already shows (one claimed ahead), else claim one."""
    ahead = [int(i) for i in state.get("next_docs") or []]
    if shown_id is not None and str(shown_id) in {str(i) for i in ahead}:
        state["current_doc"] = int(str(shown_id))
        state["next_docs"] = [i for i in ahead if str(i) != str(shown_id)]
    else:
        claim_next()


# The browser's last sync, read before anything of the note is drawn: an accept saves and
# the next note is drawn in this same run, so the old note never reaches the screen again.
action = (state.get("review_editor") or {}).get("action")
action = action if isinstance(action, dict) else None
fresh_action = action is not None and action.get("seq") != state.get("editor_seq")
if fresh_action:
    # Each browser action is handled once, and acknowledged (``ack`` in the editor's data)
    # even when it is for a note no longer open: the browser sends its next action only then.
    state["editor_seq"] = action.get("seq")
if fresh_action and str(action.get("doc_id")) == str(layers.doc_id):
    kind = action.get("type")
    # The note the browser moved on to at once (claimed ahead: ``next_docs``), if any.
    shown = action.get("shown")
    try:
        if kind in ("draft", "accept", "save"):
            synced = layer_from_browser(edit, action.get("spans"), tokens, len(doc.text), user, labels)
            state["drafts"][layers.doc_id] = edit = synced
            if kind == "draft":
                repo.autosave_draft(ctx.engine, layers.doc_id, user, synced.spans, opened["version"])
    except EditRejected as exc:
        flash(state, "warning", f"Edits not applied: {exc}")
        state["editor_rev"] += 1  # the browser goes back to the last good layer
        st.rerun()
    if kind == "accept":
        save(and_next=True, shown=shown)
        st.rerun()
    elif kind == "save":
        save(and_next=False)
        st.rerun()
    elif kind == "skip":
        skip(shown)
        st.rerun()
    elif kind == "back":
        back()
        st.rerun()

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
n_reviewed, n_total = progress_numbers(repo.status_counts(ctx.engine, project.name))
progress_line = f"{n_reviewed} of {n_total} reviewed" + pace_text(state["session_reviews"])

conflict = state.get("conflict")
if conflict is None and opened["version"] != layers.version:
    st.warning(f"{layers.updated_by or 'Someone'} saved this note since you opened it (version"
               f" {layers.version}).", icon=":material/sync_problem:")
    if st.button("Load their version (drops your unsaved edits)", key="load_theirs"):
        state["drafts"].pop(layers.doc_id, None)
        state["opened"].pop(layers.doc_id, None)
        st.rerun()
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
    stored = [d for d in repo.list_drafts(ctx.engine, doc_id=layers.doc_id, author=user)
              if d.reason == "conflict"]
    if stored and not edit.dirty:
        d = stored[0]
        st.warning(f"You have an unsaved draft of this note from a save conflict ({len(d.spans)} spans).")
        if st.button("Load my draft", key="load_draft"):
            set_edit(EditState(tuple(d.spans), (edit.spans,), edit.origin))
            state["opened"][layers.doc_id] = {"version": layers.version, "at": opened["at"],
                                             "draft_id": d.id}
            st.rerun()

if st.button("Release", key="release", help="Give the note back to the queue without saving"):
    repo.release(ctx.engine, layers.doc_id, user)
    for ahead_id in state.get("next_docs") or []:  # the notes claimed ahead go back too
        repo.release(ctx.engine, int(ahead_id), user)
    state["next_docs"] = []
    state["drafts"].pop(layers.doc_id, None)
    state["opened"].pop(layers.doc_id, None)
    state["current_doc"] = None
    st.query_params.pop("doc", None)
    st.switch_page("pages/queue.py")

# ---------------------------------------------------------------- the note
def note_payload(note: repo.DocumentLayers, note_view: ModelView, note_edit: EditState,
                 note_tokens: list, rev: str, offset: int | None = None, **more: object) -> dict:
    text = note.document.text
    known = patient_phi_strings(ctx.engine, state["patient_phi"], project.id,
                                note.document.meta.get("patient_id"), note.doc_id)
    return editor_payload(
        doc_id=str(note.doc_id), rev=rev, text=text, spans=note_edit.spans, origin=note_edit.origin,
        labels=labels, colours=scheme.colours(), near_misses=note_view.near_misses,
        uncertain_below=uncertain_below, tokens=[(t.start, t.end) for t in note_tokens], known=known,
        numeric=numeric_context_tokens(text, note_tokens),
        base=f"{note.doc_id}:{note.version}", user=user, progress=progress_line, focus_offset=offset,
        **more,
    )


#: Notes claimed ahead and sent with the open one: two, so a reviewer who accepts clean notes
#: faster than the server saves them still finds the next note in the browser.
AHEAD = 2


def notes_ahead() -> list[repo.DocumentLayers]:
    """The notes after this one, claimed for this reviewer ahead of time (kept across runs)."""
    held = hold_ahead(ctx.engine, project, user, layers.doc_id, state.get("next_docs") or [], AHEAD)
    state["next_docs"] = [n.doc_id for n in held]
    return held


# The next note goes to the browser with this one (like Prodigy's task queue): on Accept or
# Skip the browser shows it at once and sends the decision; this page's next run saves it
# and sends the note after. Only while the reviewer works through their own queue, and not
# while a conflict or a newer version needs their attention first.
ahead = []
if (layers.status == "in_review" and layers.assigned_to == user and opened["version"] == layers.version
        and (conflict is None or conflict.doc_id != layers.doc_id)):
    for upcoming in notes_ahead():
        up_view = view_for(upcoming.document, upcoming.prediction)
        up_edit, _ = starting_edit(upcoming, up_view)
        ahead.append(note_payload(upcoming, up_view, up_edit,
                                  tokenize(upcoming.document.text, project.lang).tokens,
                                  f"{upcoming.version}.ahead"))
review_editor(note_payload(layers, view, edit, tokens, f"{layers.version}.{state['editor_rev']}",
                           focus_offset, ahead=ahead, ack=state.get("editor_seq")),
              key="review_editor")

with st.expander("Legend"):
    st.html(page_html(render_legend_html(labels, scheme, numbered=True) + render_marks_legend_html()))

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
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", placeholder="")
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
