"""Model page logic for rule feedback: the rule table, demote/undo, and list suggestions.

A demotion or its undo changes what the project's model tags, so each is
followed by a re-prediction of the unreviewed queue with the active model:
reviewers stop (or start again) seeing the rule's spans on their next note.
The page runs these as background jobs, like a retrain.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from deid_core.store.rule_feedback import (
    RuleFeedback,
    apply_rule_policy,
    demote_rule,
    feedback_key,
    project_rule_feedback,
    restore_rule,
)

Progress = Callable[[str, float], None]

RULE_COLUMNS = ["rule", "status", "label", "kept", "relabelled", "reshaped", "deleted", "decisions",
                "notes", "precision", "overlap_precision"]


STATE_KEY = "rule_feedback"


def session_feedback(state: MutableMapping[str, Any], engine: Engine, project: str, actor: str) -> RuleFeedback:
    """The project's rule feedback, recomputed only when ``feedback_key`` changes.

    Reading every reviewed note costs about 1 CPU second per 2,000 reviewed notes
    (bench/rule_feedback.py), too much for every rerun of the Model page. It
    is kept in the admin's own session state (it holds note text in the
    suggestions, so never in a process-wide cache).
    """
    key = feedback_key(engine, project)
    held = state.get(STATE_KEY)
    if not held or held[0] != key:
        held = (key, project_rule_feedback(engine, project, actor=actor))
        state[STATE_KEY] = held
    return held[1]


def rule_table(feedback: RuleFeedback) -> pd.DataFrame:
    """One row per rule: reviewer decisions, precision, and whether it still tags on its own."""
    rows = feedback.rows()
    frame = pd.DataFrame(rows, columns=RULE_COLUMNS)
    order = {"demoted": 0, "below threshold": 1, "restored": 2, "standalone": 3}
    if rows:
        frame = frame.assign(_o=frame["status"].map(order)).sort_values(
            ["_o", "precision", "rule"], na_position="last").drop(columns="_o")
    return frame.reset_index(drop=True)


def suggestion_table(feedback: RuleFeedback) -> pd.DataFrame:
    """The allow/deny suggestions as a table. Holds note text: for an admin's screen only."""
    return pd.DataFrame(
        [{"list": "allow (never tag)" if s.kind == "allow" else "deny (always tag)",
          "text": s.text, "label": s.label, "notes": s.notes, "times": s.occurrences}
         for s in feedback.suggestions],
        columns=["list", "text", "label", "notes", "times"],
    )


def rule_job_summary(result: dict[str, Any]) -> str:
    """One line for a finished demote/undo/check job (rule names and counts only)."""
    parts = []
    if "demoted" in result:
        names = result["demoted"]
        parts.append(f"demoted {', '.join(names)} to feature-only" if names else "no rule is below the threshold")
    if result.get("restored"):
        parts.append(f"restored {', '.join(result['restored'])}")
    parts.append(f"{result.get('repredicted', 0)} unreviewed notes re-predicted")
    return "Rules: " + "; ".join(parts) + "."


def _repredict(engine: Engine, project: str, actor: str, progress: Progress | None) -> int:
    from deid_core.ui.learning import predict_with_active

    return predict_with_active(engine, project, actor, progress=progress)


def set_rule_and_repredict(
    engine: Engine, project: str, rule: str, actor: str, *, demote: bool,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Demote ``rule`` by hand, or undo its demotion (audited with its current counts),
    and re-predict the queue with the rule's new standing."""
    stats = project_rule_feedback(engine, project, actor=actor, suggestions=False).stats.get(rule)
    (demote_rule if demote else restore_rule)(engine, project, rule, actor=actor, stats=stats)
    n = _repredict(engine, project, actor, progress)
    done = "demoted" if demote else "restored"
    if progress is not None:
        progress(f"rule {rule} {done}; {n} notes re-predicted", 1.0)
    return {done: [rule], "repredicted": n}


def check_rules_and_repredict(
    engine: Engine, project: str, actor: str, *, progress: Progress | None = None
) -> dict[str, Any]:
    """Apply the precision threshold now (as every retrain does); re-predict if a rule was demoted."""
    demoted = apply_rule_policy(engine, project, actor=actor)
    n = _repredict(engine, project, actor, progress) if demoted else 0
    if progress is not None:
        progress(f"{len(demoted)} rule(s) demoted; {n} notes re-predicted", 1.0)
    return {"demoted": demoted, "repredicted": n}


def rule_history(engine: Engine, project_id: int, limit: int = 20) -> pd.DataFrame:
    """The latest demotions and undos from the audit trail (who, when, the evidence)."""
    from deid_core.store.audit import list_events

    rows = []
    for e in list_events(engine, entity_type="rule", project_id=project_id, limit=limit):
        after = e.after or {}
        rows.append({"when": e.at, "who": e.actor,
                     "change": "demoted" if e.action == "rule.demote" else "restored",
                     "rule": e.entity_id, "automatic": bool(after.get("automatic")),
                     "precision": after.get("precision"), "decisions": after.get("decisions")})
    return pd.DataFrame(rows, columns=["when", "who", "change", "rule", "automatic", "precision",
                                       "decisions"])
