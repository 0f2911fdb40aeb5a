"""Rule feedback from reviewers: per-rule decisions, demotion to feature-only, and its undo.

Each reviewed note keeps the prediction the reviewer started from and the
reviewed layer, so what reviewers did to every rule's spans is known
(``deid_core.evaluation.rule_feedback``). A rule whose precision on them is
below the project's threshold is *demoted*: the project's predictions stop
taking its spans (``DeidModel.without_rules``), while the CRF still sees its
matches as features. Demotion is project state, never an edit of the shipped
rule files or of a model directory, so it survives retraining and is undone
by taking the rule off the list.

The project's settings hold two lists of rule names: ``demoted_rules`` and
``restored_rules`` (rules an admin put back; the automatic check leaves them
alone from then on). Every change is an audit event (``rule.demote``,
``rule.restore``) with the counts that justified it, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from deid_core.errors import StoreError
from deid_core.evaluation.rule_feedback import (
    ListSuggestion,
    RuleFeedbackPolicy,
    RuleStats,
    demotion_candidates,
    rule_stats,
    suggest_lists,
)
from deid_core.spans import Span, sort_spans
from deid_core.store.audit import record_event
from deid_core.store.authz import SYSTEM, Actor, check
from deid_core.store.engine import read_session, write_session
from deid_core.store.models import Annotation, DocumentRow, PredictionRow, Review
from deid_core.store.repository import _project, _visible, spans_from_json

DEMOTED = "demoted_rules"
RESTORED = "restored_rules"


def demoted_rules(settings: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The rule names a project's settings demote (sorted)."""
    return tuple(sorted({str(n) for n in (settings or {}).get(DEMOTED) or ()}))


def restored_rules(settings: Mapping[str, Any] | None) -> tuple[str, ...]:
    return tuple(sorted({str(n) for n in (settings or {}).get(RESTORED) or ()}))


def with_project_rules(model: Any, settings: Mapping[str, Any] | None) -> Any:
    """``model`` as the project predicts with it: its demoted rules as features only."""
    names = demoted_rules(settings)
    return model.without_rules(names) if names else model


@dataclass(frozen=True, slots=True)
class ReviewedNote:
    """A reviewed note: the prediction its review started from and the reviewed layer.

    ``text`` is note text: for the caller's eyes only (list suggestions).
    """

    doc_id: int
    text: str
    predicted: tuple[Span, ...]
    final: tuple[Span, ...]


def reviewed_notes(
    engine: Engine, project: str, *, actor: Actor = SYSTEM, batch_size: int = 200
) -> Iterator[ReviewedNote]:
    """Every reviewed note that has a prediction, with the prediction before review and the
    final spans (rejected predictions excluded), by id, in batches.

    The prediction is the one the reviewed layer points to (``prediction_id``:
    what the reviewer saw when saving), else the earliest for the note: a
    later one may come from a model trained on this very review. Admins only:
    it hands out note text.
    """
    last = 0
    while True:
        with read_session(engine) as s:
            check(s, actor, "admin", "read rule feedback")
            proj = _project(s, project)
            docs = list(s.execute(
                select(DocumentRow.id, DocumentRow.version, DocumentRow.text)
                .where(DocumentRow.project_id == proj.id, DocumentRow.status == "reviewed",
                       DocumentRow.version > 0, DocumentRow.id > last, _visible())
                .order_by(DocumentRow.id).limit(batch_size)))
            if not docs:
                return
            ids = [d.id for d in docs]
            versions = {d.id: d.version for d in docs}
            final: dict[int, list[Span]] = {i: [] for i in ids}
            linked: dict[int, set[int]] = {i: set() for i in ids}
            # Columns, not ORM objects: building an object per span was most of the time.
            for a in s.execute(select(
                    Annotation.document_id, Annotation.doc_version, Annotation.prediction_id,
                    Annotation.decision, Annotation.start_char, Annotation.end_char,
                    Annotation.label, Annotation.source, Annotation.score,
            ).where(Annotation.document_id.in_(ids))):
                if versions[a.document_id] != a.doc_version:
                    continue
                if a.prediction_id is not None:
                    linked[a.document_id].add(a.prediction_id)
                if a.decision != "rejected":
                    final[a.document_id].append(Span(a.start_char, a.end_char, a.label, a.source, a.score))
            preds: dict[int, list[tuple[int, Any]]] = {i: [] for i in ids}
            for p in s.execute(select(PredictionRow.id, PredictionRow.document_id, PredictionRow.spans)
                               .where(PredictionRow.document_id.in_(ids)).order_by(PredictionRow.id)):
                preds[p.document_id].append((p.id, p.spans))
        for d in docs:
            rows = preds[d.id]
            if not rows:
                continue
            chosen = next((spans for pid, spans in rows if pid in linked[d.id]), rows[0][1])
            yield ReviewedNote(d.id, d.text, tuple(spans_from_json(chosen)),
                               tuple(sort_spans(final[d.id])))
        last = docs[-1].id


def feedback_key(engine: Engine, project: str) -> tuple[Any, ...]:
    """Changes whenever the rule feedback may: a review saved, a note (un)reviewed, a demotion,
    or a policy setting. Cheap (two aggregates), so a page can keep the feedback between runs."""
    from deid_core.store.repository import get_project

    info = get_project(engine, project)
    with read_session(engine) as s:
        n, last = s.execute(
            select(func.count(func.distinct(DocumentRow.id)), func.max(Review.id))
            .select_from(DocumentRow).join(Review, Review.document_id == DocumentRow.id, isouter=True)
            .where(DocumentRow.project_id == info.id, DocumentRow.status == "reviewed")).one()
    policy = RuleFeedbackPolicy.from_settings(info.settings)
    return (info.id, int(n or 0), last, demoted_rules(info.settings), restored_rules(info.settings),
            tuple(policy.to_settings().items()))


@dataclass(frozen=True)
class RuleFeedback:
    """What the Model page shows: per-rule counts, the policy, the lists, and suggestions."""

    stats: dict[str, RuleStats]
    policy: RuleFeedbackPolicy
    demoted: tuple[str, ...]
    restored: tuple[str, ...]
    suggestions: tuple[ListSuggestion, ...]
    n_notes: int

    def rows(self) -> list[dict[str, Any]]:
        """One row per rule with decisions or a demotion, with its status; no note text."""
        out = []
        for name in sorted(set(self.stats) | set(self.demoted)):
            s = self.stats.get(name) or RuleStats(name)
            status = ("demoted" if name in self.demoted else
                      "restored" if name in self.restored else
                      "below threshold" if self.policy.below(s) else "standalone")
            out.append({**s.to_row(), "status": status})
        return out


def project_rule_feedback(
    engine: Engine, project: str, *, actor: Actor = SYSTEM, suggestions: bool = True
) -> RuleFeedback:
    """Rule statistics and (unless ``suggestions=False``) list suggestions over the project's
    reviewed notes (admins only)."""
    from deid_core.store.repository import get_project

    info = get_project(engine, project)
    policy = RuleFeedbackPolicy.from_settings(info.settings)
    notes = list(reviewed_notes(engine, project, actor=actor))
    stats = rule_stats((n.predicted, n.final) for n in notes)
    found = suggest_lists(((n.text, n.predicted, n.final) for n in notes),
                          min_notes=policy.list_suggestion_min_notes) if suggestions else []
    return RuleFeedback(stats, policy, demoted_rules(info.settings), restored_rules(info.settings),
                        tuple(found), len(notes))


def _evidence(stats: RuleStats | None, policy: RuleFeedbackPolicy) -> dict[str, Any]:
    row = (stats or RuleStats("")).to_row()
    return {k: row[k] for k in ("kept", "relabelled", "reshaped", "deleted", "decisions", "precision")} | {
        "min_precision": policy.rule_min_precision, "min_decisions": policy.rule_min_decisions}


def _change(
    engine: Engine, project: str, rule: str, *, demote: bool, actor: Actor, automatic: bool,
    stats: RuleStats | None,
) -> None:
    if not rule or not isinstance(rule, str):
        raise StoreError("name the rule to demote or restore")
    rule = rule.removeprefix("rule:")
    what = "demote a rule" if demote else "restore a demoted rule"
    with write_session(engine) as s:
        who = check(s, actor, "admin", what)
        p = _project(s, project)
        before = dict(p.settings or {})
        demoted = set(demoted_rules(before))
        restored = set(restored_rules(before))
        if demote:
            if rule in demoted:
                raise StoreError(f"rule {rule!r} is already demoted in project {project!r}")
            demoted.add(rule)
            restored.discard(rule)
        else:
            if rule not in demoted:
                raise StoreError(f"rule {rule!r} is not demoted in project {project!r}: nothing to undo")
            demoted.discard(rule)
            restored.add(rule)
        after = {**before, DEMOTED: sorted(demoted), RESTORED: sorted(restored)}
        p.settings = after
        policy = RuleFeedbackPolicy.from_settings(before)
        record_event(
            s, who, "rule.demote" if demote else "rule.restore", "rule", rule, project_id=p.id,
            before={"rule": rule, DEMOTED: sorted(demoted_rules(before)),
                    RESTORED: sorted(restored_rules(before))},
            after={"rule": rule, DEMOTED: sorted(demoted), RESTORED: sorted(restored),
                   "automatic": automatic, **_evidence(stats, policy)},
        )


def demote_rule(
    engine: Engine, project: str, rule: str, *, actor: Actor = SYSTEM, stats: RuleStats | None = None,
    automatic: bool = False,
) -> None:
    """Make ``rule`` feature-only in ``project`` (audited, with ``stats`` as the evidence).

    Takes effect at the next prediction of the queue; the caller re-predicts.
    """
    _change(engine, project, rule, demote=True, actor=actor, automatic=automatic, stats=stats)


def restore_rule(
    engine: Engine, project: str, rule: str, *, actor: Actor = SYSTEM, stats: RuleStats | None = None
) -> None:
    """Undo a demotion (audited). The automatic check will not demote the rule again; an
    admin still can."""
    _change(engine, project, rule, demote=False, actor=actor, automatic=False, stats=stats)


def apply_rule_policy(engine: Engine, project: str, *, actor: Actor = SYSTEM) -> list[str]:
    """Demote every rule below the project's precision threshold; returns their names.

    Rules already demoted, and rules an admin restored, are left alone.
    """
    feedback = project_rule_feedback(engine, project, actor=actor, suggestions=False)
    names = demotion_candidates(feedback.stats, feedback.policy, demoted=feedback.demoted,
                                restored=feedback.restored)
    for name in names:
        demote_rule(engine, project, name, actor=actor, stats=feedback.stats[name], automatic=True)
    return names
