"""Bias (admin): the O-label bias slider with live precision/recall on the reviewed notes."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from deid_core.errors import DeidError
from deid_core.schemes import load_scheme
from deid_core.spans import Document
from deid_core.store import repository as repo
from deid_core.store.rule_feedback import demoted_rules, with_project_rules
from deid_core.ui.bias import (
    BIAS_MAX,
    BIAS_MIN,
    bias_curve,
    curve_chart,
    largest_bias_reaching,
    metrics_at_bias,
    model_recall_bias,
)
from deid_core.ui.job_view import show_job
from deid_core.ui.jobs import get_job, start_job
from deid_core.ui.queue import predict_unreviewed
from deid_core.ui.render import page_html, render_legend_html, render_note_html
from deid_core.ui.resources import guard, model_at
from deid_core.ui.safe_text import md

ctx = guard("bias")
project = ctx.need_project()
state = st.session_state
st.title("O-label bias")
st.caption(
    "A negative bias lowers the score of the 'not PHI' label at every token, so the model marks"
    " more text as PHI: recall goes up, precision down (Wellner et al. 2007). Reviewed notes are"
    " the gold standard here."
)

mv = repo.active_model_version(ctx.engine, project.name)
if mv is None or not Path(mv.artifact_path).is_dir():
    st.info("There is no active model yet: train one on the Model page.")
    st.stop()
try:
    # As the project predicts: its demoted rules are features only (deid_core.store.rule_feedback).
    model = with_project_rules(model_at(mv.artifact_path), project.settings)
except DeidError as exc:
    st.error(f"The active model cannot be loaded: {md(exc)}")
    st.stop()

job_name = f"predict:{project.id}"


def use_bias(value: float) -> None:
    """Save the bias (audited) and re-predict the unreviewed queue in the background."""
    repo.update_project_settings(ctx.engine, project.name, {"bias": float(value)},
                                 actor=ctx.user.username)
    engine, name, version, version_id = ctx.engine, project.name, mv.version, mv.id
    start_job(job_name, "Re-predicting the queue",
              lambda progress: predict_unreviewed(engine, name, model, model_version=version,
                                                  model_version_id=version_id, bias=float(value),
                                                  progress=progress, actor=ctx.user.username))
    state["encoded"] = {}
    st.rerun()


recall_bias = model_recall_bias(model)
if recall_bias is not None:
    info = model.metadata.get("recall_bias_info") or {}
    in_use = float(project.settings.get("bias", 0.0)) == recall_bias
    st.caption(
        f"Model {mv.version} records a recall bias of {recall_bias:+.2f}: the largest bias that"
        f" reached {round(100 * float(info.get('target', 0.97)), 1):g}% character recall on its own"
        " held-out synthetic notes (not your notes: check it on reviewed notes below)."
        + (" The project uses it now (a project that starts from the starter model starts there) and"
           " follows it: when a retrain replaces the model, the project moves to the new model's own"
           " recall bias, measured the same way. Moving the slider stops that." if in_use else "")
    )
    recall_job = get_job(job_name)
    if st.button(f"Use the model's recall bias ({recall_bias:+.2f}) for this project", key="use_recall_bias",
                 disabled=in_use or (recall_job is not None and recall_job.running)):
        state["bias_slider"] = recall_bias
        use_bias(recall_bias)

MAX_NOTES = 300
gold = list(repo.reviewed_corpus(ctx.engine, project.name))[-MAX_NOTES:]
if not gold:
    st.info("No reviewed notes yet: the curve needs reviewed notes as gold.")
    st.stop()

# Encode once per (model, demoted rules, reviewed set); every slider move only re-decodes.
key = (mv.version, demoted_rules(project.settings), tuple((d.id, d.meta.get("version")) for d in gold))
cache = state.get("bias_cache")
if not cache or cache.get("key") != key:
    bar = st.progress(0.0, text="Encoding the reviewed notes (once per model)")
    encoded = []
    for i, d in enumerate(gold):
        encoded.append(model.encode(Document(d.id, d.text)))
        bar.progress((i + 1) / len(gold), text=f"Encoding reviewed notes: {i + 1}/{len(gold)}")
    bar.progress(1.0, text="Computing the curve over the bias range")
    points = bias_curve(model, gold, encoded)
    bar.empty()
    cache = {"key": key, "encoded": encoded, "points": points}
    state["bias_cache"] = cache

saved_bias = float(project.settings.get("bias", 0.0))
if "bias_slider" not in state:
    state["bias_slider"] = saved_bias
bias = st.slider("O-label bias", BIAS_MIN, BIAS_MAX, step=0.25, key="bias_slider",
                 help="Negative: more PHI marked (recall). Positive: fewer (precision).")
point = metrics_at_bias(model, gold, cache["encoded"], bias)

c = st.columns(4)
c[0].metric("Strict precision", f"{point.strict['precision']:.3f}")
c[1].metric("Strict recall", f"{point.strict['recall']:.3f}")
c[2].metric("Strict F1", f"{point.strict['f1']:.3f}")
c[3].metric("PHI characters missed", f"{100 * point.missed_char_share:.2f} %",
            help="1 - character-level recall: the share of PHI characters a release would leak")
c = st.columns(4)
c[0].metric("Char precision", f"{point.char['precision']:.3f}")
c[1].metric("Char recall", f"{point.char['recall']:.3f}")
c[2].metric("Char F1", f"{point.char['f1']:.3f}")
c[3].metric("Predicted spans", point.n_pred_spans)
target = largest_bias_reaching(cache["points"], 0.99)
st.caption(
    f"Measured on {len(gold)} reviewed notes with model {mv.version}. Saved project bias:"
    f" {saved_bias:+.2f}. "
    + (f"Largest bias reaching 99% character recall: {target:+.2f}." if target is not None
       else "No bias in the range reaches 99% character recall.")
)

st.altair_chart(curve_chart(cache["points"], point), width="content")

job = get_job(job_name)
running = job is not None and job.running
if st.button("Use for this project", type="primary", disabled=running, key="use_bias",
             help="Save the bias (audited) and re-predict the unreviewed queue in the background"):
    use_bias(bias)


@st.fragment(run_every=1.0)
def job_status() -> None:
    snap = show_job(get_job(job_name), running="Re-predicting the queue", failed="Re-prediction failed")
    if snap is not None:
        st.success(f"Queue re-predicted at the saved bias ({snap['message']}).")


job_status()

with st.expander("See the highlights of a reviewed note at this bias", expanded=True):
    names = [d.id for d in gold]
    pick = st.selectbox("Note", names, key="bias_note")
    i = names.index(pick)
    pred = model.decode(cache["encoded"][i], bias)
    scheme = load_scheme(project.scheme)
    st.caption(f"{len(pred.spans)} predicted spans vs {len(gold[i].spans)} reviewed.")
    st.html(page_html(render_legend_html(sorted({s.label for s in pred.spans}), scheme)
                      + render_note_html(gold[i].text, pred.spans, scheme=scheme,
                                         near_misses=pred.near_misses(0.2))))
