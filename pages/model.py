"""Model (admin): retrain in the background, versions with held-out metrics, activate/roll back,
learning curve, queue strategy, rule feedback (demote/undo, list suggestions) and the history of
decisions with their reasons."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from deid_core.learning.active import strategy_descriptions
from deid_core.learning.registry import RetrainPolicy, learning_curve
from deid_core.store import repository as repo
from deid_core.ui.job_view import show_job
from deid_core.ui.jobs import ended_unseen, get_job, start_job
from deid_core.ui.learning import (
    activate_and_repredict,
    compared_bias,
    order_queue_by_strategy,
    retrain_project,
    starter_notes,
)
from deid_core.ui.resources import guard
from deid_core.ui.rules import (
    check_rules_and_repredict,
    rule_history,
    rule_job_summary,
    rule_table,
    session_feedback,
    set_rule_and_repredict,
    suggestion_table,
)

ctx = guard("model")
project = ctx.need_project()
actor = ctx.user.username
st.title("Model")

versions = repo.list_model_versions(ctx.engine, project.name)
active = next((v for v in versions if v.active), None)
counts = repo.status_counts(ctx.engine, project.name)
policy = RetrainPolicy.from_settings(project.settings)
trained_on = active.n_train_docs if active is not None else 0
st.caption(
    f"Active model: **{active.version if active else 'none'}** · {counts['reviewed']} reviewed notes"
    f" · retraining policy: every {policy.retrain_every} newly reviewed notes"
    + (f", with L-BFGS every {policy.full_every}" if policy.full_every else "")
)

JOB = f"model:{project.id}"


def launch(label: str, work) -> None:  # type: ignore[no-untyped-def]
    start_job(JOB, label, work)
    st.rerun()


job = get_job(JOB)
ended_unseen(st.session_state, job)  # this full run already shows the job's results
busy = job is not None and job.running
c1, c2 = st.columns([1, 3])
if c1.button("Retrain now", type="primary", disabled=busy or counts["reviewed"] < 2, key="retrain"):
    engine, name = ctx.engine, project.name
    launch("Retraining", lambda progress: retrain_project(engine, name, actor, progress=progress))
if c1.button("Full retrain (L-BFGS)", disabled=busy or counts["reviewed"] < 2, key="retrain_full",
             help="Automatic rounds use a fast crfsuite algorithm; this trains the same candidate"
                  " with L-BFGS (slower, usually a little better) and judges it the same way."):
    engine, name = ctx.engine, project.name
    launch("Full retraining", lambda progress: retrain_project(engine, name, actor, full=True,
                                                              progress=progress))
c2.caption("Trains on the active model's own training notes plus every reviewed note (imported"
           " gold included), the reviewed notes weighted up, compares the candidate with the active"
           " model on reviewed notes the candidate did not train on (character recall first, then"
           " strict F1), and activates it only if it is not worse. Runs in the background: keep"
           " reviewing. Retrain now uses a fixed sample of the training notes and a fast crfsuite"
           " setting; Full retrain uses all of them with L-BFGS (slower, usually a little better).")


@st.fragment(run_every=1.0)
def job_panel() -> None:
    j = get_job(JOB)
    if j is None:
        return
    if ended_unseen(st.session_state, j):
        st.rerun(scope="app")  # versions, curve, history and buttons live outside the fragment
    snap = show_job(j)
    if snap is not None:
        result = j.result
        if isinstance(result, dict) and "accepted" in result:
            (st.success if result["accepted"] else st.warning)(
                f"Model {result['version']}: {result['reason']}"
                f" ({result['n_train_docs']} notes, {result['seconds']} s;"
                f" {result['repredicted']} notes re-predicted)"
                + (f". The project follows the model's recall bias: {result['bias_before']:+.2f} →"
                   f" {result['bias']:+.2f}." if "bias_before" in result else "")
            )
            if result.get("demoted_rules"):
                st.warning("Demoted to features only (precision below the threshold): "
                           + ", ".join(result["demoted_rules"]))
        elif isinstance(result, dict) and ("demoted" in result or "restored" in result):
            st.success(rule_job_summary(result))
        else:
            st.success(f"{snap['label']}: done ({snap['message']})")


job_panel()

st.subheader("Versions")
if not versions:
    st.info("No model yet. Review some notes (or import gold) and press Retrain now.")
else:
    rows = []
    for v in reversed(versions):
        ev = (v.metrics or {}).get("evaluation") or {}
        cand = ev.get("candidate") or {}
        rows.append({
            "version": v.version, "active": v.active, "created": v.created_at,
            "trained on": v.n_train_docs, "parent": v.parent_version,
            "starter notes": starter_notes(v.metrics),
            "weighting": (v.metrics or {}).get("adaptation"),
            "held-out strict F1": cand.get("strict_f1"), "held-out char recall": cand.get("char_recall"),
            "at bias": compared_bias(v.metrics),
            "evaluated on": ev.get("n_eval_docs"), "method": ev.get("method"),
            "decision": ev.get("decision"),
        })
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", placeholder="")
    a1, a2 = st.columns(2)
    names = [v.version for v in reversed(versions)]
    pick = a1.selectbox("Version", names, key="model_pick")
    if a1.button("Activate this version", disabled=busy or (active is not None and pick == active.version),
                 key="activate"):
        engine, name = ctx.engine, project.name
        launch(f"Activating {pick}", lambda progress: activate_and_repredict(
            engine, name, pick, actor, progress=progress))
    parent = active.parent_version if active is not None else None
    if a2.button(f"Roll back to {parent}" if parent else "Roll back", disabled=busy or not parent,
                 key="rollback"):
        engine, name = ctx.engine, project.name
        launch(f"Rolling back to {parent}", lambda progress: activate_and_repredict(
            engine, name, str(parent), actor, progress=progress))

st.subheader("Learning curve")
curve = learning_curve([{"version": v.version, "created_at": v.created_at, "metrics": v.metrics}
                        for v in versions])
if not curve:
    st.info("The curve appears after the first retrain: held-out scores against reviewed notes.")
else:
    frame = pd.DataFrame(curve)
    long = frame.melt(id_vars=["version", "docs", "tokens", "accepted"],
                      value_vars=["strict_f1", "char_recall"], var_name="measure")
    base = alt.Chart(long).encode(
        y=alt.Y("value:Q", scale=alt.Scale(zero=False), title="held-out score"),
        color=alt.Color("measure:N", title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["version", "docs", "tokens", "measure", alt.Tooltip("value:Q", format=".3f"), "accepted"],
    )
    by_docs = (base.mark_line(point=True).encode(x=alt.X("docs:Q", title="reviewed notes trained on",
                                                            axis=alt.Axis(format="d", tickMinStep=1)))
               .properties(width=320, height=260))
    by_tokens = (base.mark_line(point=True).encode(x=alt.X("tokens:Q", title="tokens trained on",
                                                              axis=alt.Axis(format=",d", tickMinStep=1)))
                 .properties(width=320, height=260))
    st.altair_chart(alt.hconcat(by_docs, by_tokens), width="content")

st.subheader("Queue order (active learning)")
strategies = strategy_descriptions()
by_name = {s["name"]: s for s in strategies}
current = project.settings.get("strategy", "least_confident_span")  # the queue's default order
choice = st.selectbox("Strategy", list(by_name), index=list(by_name).index(current) if current in by_name else 0,
                      format_func=lambda n: by_name[n]["title"], key="strategy")
st.caption(by_name[choice]["description"])
if st.button("Order the queue with this strategy", disabled=busy, key="apply_strategy"):
    engine, name = ctx.engine, project.name
    launch(f"Ordering the queue by {choice}", lambda progress: order_queue_by_strategy(
        engine, name, choice, actor, progress=progress))

with st.expander("Retraining policy"):
    every = st.number_input("Retrain after this many newly reviewed notes", 1, 10_000,
                            value=int(policy.retrain_every), key="retrain_every")
    full_every = st.number_input(
        "Use L-BFGS once this many notes were reviewed since the last L-BFGS model (0: never)", 0, 100_000,
        value=int(policy.full_every), key="full_every",
        help="Automatic rounds train with a fast algorithm to finish in about half a minute; an L-BFGS"
             " round takes minutes but is usually a little more accurate.")
    if st.button("Save policy", key="save_policy"):
        repo.update_project_settings(ctx.engine, project.name,
                                     {"retrain_every": int(every), "full_every": int(full_every)}, actor=actor)
        st.success("Saved.")

st.subheader("Rules")
feedback = session_feedback(st.session_state, ctx.engine, project.name, actor)
rp = feedback.policy
st.caption(
    f"What reviewers did to each rule's spans on {feedback.n_notes} reviewed notes that started from a"
    " model's prediction (imported gold has none): kept, relabelled,"
    f" reshaped (other boundaries) or deleted. Precision is kept / decisions. At each retrain a rule"
    f" below {rp.rule_min_precision:.0%} after at least {rp.rule_min_decisions} decisions is demoted:"
    " it no longer tags on its own in this project, but still helps the CRF as a feature. An undo"
    " puts it back and the automatic check leaves it alone from then on."
)
rules_frame = rule_table(feedback)
if rules_frame.empty:
    st.info("No reviewed note holds a rule's span yet.")
else:
    st.dataframe(rules_frame, hide_index=True, width="stretch", placeholder="", key="rule_table")
    r1, r2 = st.columns(2)
    pick_rule = r1.selectbox("Rule", rules_frame["rule"].tolist(), key="rule_pick")
    engine, name = ctx.engine, project.name
    demote = pick_rule not in feedback.demoted
    if r1.button(f"Demote {pick_rule} to a feature" if demote else f"Undo demotion of {pick_rule}",
                 disabled=busy, key="rule_demote" if demote else "rule_restore"):
        launch(f"{'Demoting' if demote else 'Restoring'} rule {pick_rule}",
               lambda progress: set_rule_and_repredict(engine, name, pick_rule, actor, demote=demote,
                                                       progress=progress))
    if r2.button("Demote the rules below the threshold now", disabled=busy, key="rule_check"):
        launch("Checking the rules", lambda progress: check_rules_and_repredict(
            engine, name, actor, progress=progress))
history = rule_history(ctx.engine, project.id)
if not history.empty:
    st.caption("Demotions and undos (audit trail)")
    st.dataframe(history, hide_index=True, width="stretch", placeholder="", key="rule_history")
with st.expander(f"Allow- and deny-list suggestions ({len(feedback.suggestions)})"):
    st.caption(
        f"Strings reviewers deleted in at least {rp.list_suggestion_min_notes} notes and never kept"
        " (allow: never tag), and strings they added where nothing was predicted in at least"
        f" {rp.list_suggestion_min_notes} notes and never deleted (deny: always tag). The project has"
        " no allow- or deny-list yet, so these are for an admin to act on by hand (a filter or a rule)."
    )
    suggestions = suggestion_table(feedback)
    if suggestions.empty:
        st.caption("No suggestion yet.")
    else:
        st.dataframe(suggestions, hide_index=True, width="stretch", placeholder="", key="suggestions")
with st.expander("Rule feedback settings"):
    min_precision = st.number_input("Demote a rule below this precision", 0.0, 1.0,
                                    value=float(rp.rule_min_precision), step=0.05, key="rule_min_precision")
    min_decisions = st.number_input("... after at least this many reviewer decisions", 1, 100_000,
                                    value=int(rp.rule_min_decisions), key="rule_min_decisions")
    min_notes = st.number_input("Suggest a list entry after this many notes", 1, 100_000,
                                value=int(rp.list_suggestion_min_notes), key="list_min_notes")
    if st.button("Save rule settings", key="save_rule_settings"):
        repo.update_project_settings(ctx.engine, project.name, {
            "rule_min_precision": float(min_precision), "rule_min_decisions": int(min_decisions),
            "list_suggestion_min_notes": int(min_notes)}, actor=actor)
        st.success("Saved.")

st.subheader("History")
if curve:
    st.dataframe(pd.DataFrame([{"version": p["version"], "created": p["created_at"],
                                "decision": "activated" if p["accepted"] else "rejected",
                                "reason": p["reason"]} for p in reversed(curve)]),
                 hide_index=True, width="stretch", placeholder="")
else:
    st.caption("No retraining decisions yet.")
