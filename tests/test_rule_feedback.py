"""Rule feedback from reviewers (issue 13 part 4): per-rule decisions, demotion and undo, list
suggestions."""

from __future__ import annotations

from pathlib import Path

import pytest
from people import add_users

from deid_core.errors import PermissionDenied, StoreError
from deid_core.evaluation.rule_feedback import (
    RuleFeedbackPolicy,
    RuleStats,
    classify,
    demotion_candidates,
    rule_stats,
    suggest_lists,
)
from deid_core.spans import Span

FIXTURE_MODEL = Path(__file__).parent / "fixtures" / "model_v1_en"


def S(a: int, b: int, label: str = "PHONE", source: str = "rule:phone") -> Span:  # noqa: N802
    return Span(a, b, label, source)


@pytest.mark.parametrize(
    ("final", "outcome"),
    [
        ([S(10, 20)], "kept"),
        ([S(10, 20, "FAX", "human:ann")], "relabelled"),
        ([S(12, 20, "PHONE", "human:ann")], "reshaped"),  # cut short
        ([S(5, 25, "FAX", "human:ann")], "reshaped"),  # grown and relabelled: boundaries first
        ([S(0, 10), S(20, 30)], "deleted"),  # touching is not overlapping (end exclusive)
        ([], "deleted"),
        ([S(10, 20, "FAX"), S(10, 20)], "kept"),  # two labels on one stretch: one is the rule's
    ],
)
def test_classify(final, outcome) -> None:  # type: ignore[no-untyped-def]
    assert classify(S(10, 20), final) == outcome


def test_rule_stats_on_toy_notes() -> None:
    phone, date = "rule:phone", "rule:date"
    pairs = [
        # note 1: phone kept, phone deleted, a date relabelled, a CRF span ignored
        ([S(0, 5, source=phone), S(10, 15, source=phone), S(20, 25, "DATE", date),
          S(30, 35, "PATIENT", "crf:v1")],
         [S(0, 5, source="rule:phone"), S(20, 25, "AGE", "human:ann"), S(30, 35, "PATIENT")]),
        # note 2: phone reshaped, date kept
        ([S(0, 8, source=phone), S(10, 14, "DATE", date)],
         [S(0, 12, "PHONE", "human:bob"), S(10, 14, "DATE", date)]),
        # note 3: no rule span at all
        ([S(0, 4, "PATIENT", "crf:v1")], []),
    ]
    stats = rule_stats(pairs)
    assert list(stats) == ["date", "phone"]
    p, d = stats["phone"], stats["date"]
    assert (p.kept, p.relabelled, p.reshaped, p.deleted, p.decisions, p.notes) == (1, 0, 1, 1, 3, 2)
    assert (d.kept, d.relabelled, d.reshaped, d.deleted, d.decisions, d.notes) == (1, 1, 0, 0, 2, 2)
    assert p.precision == pytest.approx(1 / 3) and p.overlap_precision == pytest.approx(2 / 3)
    assert d.labels == {"DATE": 2}
    row = p.to_row()
    assert row["precision"] == 0.3333 and row["label"] == "PHONE" and row["decisions"] == 3
    assert rule_stats([]) == {}


def test_policy_thresholds_and_candidates() -> None:
    policy = RuleFeedbackPolicy.from_settings({"bias": -1.0, "retrain_every": 5})  # other keys ignored
    assert (policy.rule_min_precision, policy.rule_min_decisions, policy.list_suggestion_min_notes) == (0.5, 20, 3)
    bad = RuleStats("bad", kept=9, deleted=11)  # 20 decisions, precision 0.45
    few = RuleStats("few", kept=1, deleted=18)  # 19 decisions: too few to judge
    edge = RuleStats("edge", kept=10, reshaped=10)  # precision exactly 0.5: not below
    good = RuleStats("good", kept=40, deleted=2)
    stats = {s.rule: s for s in (bad, few, edge, good)}
    assert [n for n, s in stats.items() if policy.below(s)] == ["bad"]
    assert demotion_candidates(stats, policy) == ["bad"]
    assert demotion_candidates(stats, policy, demoted=["bad"]) == []
    assert demotion_candidates(stats, policy, restored=["bad"]) == []  # an admin's undo stands
    strict = RuleFeedbackPolicy.from_settings({"rule_min_precision": 0.6, "rule_min_decisions": 19})
    assert demotion_candidates(stats, strict) == ["bad", "few", "edge"]
    with pytest.raises(ValueError, match="rule_min_precision"):
        RuleFeedbackPolicy(rule_min_precision=1.5)
    with pytest.raises(ValueError, match="rule_min_decisions"):
        RuleFeedbackPolicy(rule_min_decisions=0)


def _note(text: str, predicted: list[tuple[str, str]], final: list[tuple[str, str]]):  # type: ignore[no-untyped-def]
    def spans(items: list[tuple[str, str]], source: str) -> list[Span]:
        out = []
        for word, label in items:
            i = text.index(word)
            out.append(Span(i, i + len(word), label, source))
        return out

    return text, spans(predicted, "rule:x"), spans(final, "human:ann")


def test_list_suggestions() -> None:
    notes = [
        # "Ward Blue" predicted and deleted in three notes (written two ways): allow.
        _note("Seen on Ward Blue by the team.", [("Ward Blue", "HOSPITAL")], []),
        _note("Back to ward  blue today.", [("ward  blue", "HOSPITAL")], []),
        _note("Ward Blue again.", [("Ward Blue", "HOSPITAL")], []),
        # "Gerald" deleted in three notes but kept in a fourth: never allowed.
        _note("Gerald said hi.", [("Gerald", "PATIENT")], []),
        _note("Gerald left.", [("Gerald", "PATIENT")], []),
        _note("Gerald came.", [("Gerald", "PATIENT")], []),
        _note("Gerald Okafor seen.", [("Gerald", "PATIENT")], [("Gerald", "PATIENT")]),
        # "Kestrel Unit" added where nothing was predicted in three notes: deny with its label.
        _note("Moved to Kestrel Unit.", [], [("Kestrel Unit", "HOSPITAL")]),
        _note("Kestrel Unit called.", [], [("Kestrel Unit", "HOSPITAL")]),
        _note("Kestrel Unit x2, Kestrel Unit.", [], [("Kestrel Unit", "LOCATION-OTHER")]),
        _note("From Kestrel Unit.", [], [("Kestrel Unit", "HOSPITAL")]),
        # "Pine" added in three notes but also deleted once: no suggestion.
        _note("Pine a.", [], [("Pine", "CITY")]),
        _note("Pine b.", [], [("Pine", "CITY")]),
        _note("Pine c.", [], [("Pine", "CITY")]),
        _note("Pine d.", [("Pine", "CITY")], []),
        # An added span that overlaps a (reshaped) prediction is not an addition.
        _note("Dr Ames x.", [("Dr Ames", "DOCTOR")], [("Ames", "DOCTOR")]),
        _note("Dr Ames y.", [("Dr Ames", "DOCTOR")], [("Ames", "DOCTOR")]),
        _note("Dr Ames z.", [("Dr Ames", "DOCTOR")], [("Ames", "DOCTOR")]),
    ]
    got = suggest_lists(notes, min_notes=3)
    assert [(s.kind, s.text, s.label, s.notes) for s in got] == [
        ("deny", "Kestrel Unit", "HOSPITAL", 4),
        ("allow", "Ward Blue", None, 3),
    ]
    assert got[0].occurrences == 4  # the fourth note's second mention was not added
    assert suggest_lists(notes, min_notes=5) == []
    assert [s.text for s in suggest_lists(notes, min_notes=4)] == ["Kestrel Unit"]


def test_without_rules_turns_a_rule_into_a_feature() -> None:
    from deid_core.engine.model import DeidModel
    from deid_core.spans import Document

    model = DeidModel.load(FIXTURE_MODEL)
    doc = Document("n", "Call back at 617-555-1234 on 03/14/2021.")
    before = model.predict(doc)
    assert "rule:phone_dashed" in {s.source for s in before.spans}
    demoted = model.without_rules(["phone_dashed", "no_such_rule"])
    after = demoted.predict(doc)
    assert "rule:phone_dashed" not in {s.source for s in after.spans}
    assert "rule:date_mdy_slash" in {s.source for s in after.spans}  # other rules still tag
    assert "rule:phone_dashed" in model.rule_mapping  # the shared model is untouched
    assert demoted.metadata["demoted_rules"] == ["phone_dashed"]
    assert model.without_rules(["no_such_rule"]) is model


def _phone_notes(n: int) -> list:  # type: ignore[type-arg]
    from deid_core.spans import Document

    return [Document(f"n{i:02d}", f"Call back at 617-555-{1000 + i} or 508-555-{2000 + i}"
                                  f" on 03/{10 + i}/2021. Patient seen in the Kestrel clinic today.") for i in range(n)]


def test_rule_demotion_and_undo(store) -> None:  # type: ignore[no-untyped-def]
    """Reviewers delete a rule's spans; the check demotes it (audited), the queue is predicted
    without it, an admin undoes it (audited), and the check leaves the restored rule alone."""
    from deid_core.store import repository as repo
    from deid_core.store.audit import list_events
    from deid_core.store.predict import predict_queue
    from deid_core.store.rule_feedback import (
        apply_rule_policy,
        demote_rule,
        feedback_key,
        project_rule_feedback,
        restore_rule,
    )
    from deid_core.ui.rules import rule_table, set_rule_and_repredict, suggestion_table

    add_users(store, admins=("ada",), reviewers=("ann",))
    repo.create_project(store, "p", lang="en", scheme="i2b2_2014", actor="ada")
    repo.import_documents(store, "p", _phone_notes(12), actor="ada")
    repo.register_model_version(store, "p", version="v1", artifact_path=str(FIXTURE_MODEL),
                                activate=True, actor="ada")
    predict_queue(store, "p", actor="ada")
    rows = repo.review_queue(store, "p", order="id", limit=100)
    unreviewed_key = feedback_key(store, "p")
    # Eleven reviews: every phone_dashed span deleted, everything else kept, "Kestrel" added
    # (the model predicts nothing there).
    for row in rows[:11]:
        layers = repo.get_document(store, row.doc_id)
        assert layers.prediction is not None
        kept = [s for s in layers.prediction.spans if s.source != "rule:phone_dashed"]
        assert len(kept) < len(layers.prediction.spans)
        text = layers.document.text
        i = text.index("Kestrel")
        assert not [s for s in kept if s.start < i + 7 and i < s.end]
        final = [*kept, Span(i, i + 7, "HOSPITAL", "human:ann")]
        repo.save_review(store, row.doc_id, "ann", final, layers.version)

    key = feedback_key(store, "p")
    assert feedback_key(store, "p") == key and key[1] == 11 and key != unreviewed_key
    feedback = project_rule_feedback(store, "p", actor="ada")
    assert feedback.n_notes == 11
    phone = feedback.stats["phone_dashed"]
    assert (phone.kept, phone.deleted, phone.decisions, phone.precision) == (0, 22, 22, 0.0)
    assert feedback.stats["date_mdy_slash"].precision == 1.0
    table = rule_table(feedback)
    assert table.iloc[0]["rule"] == "phone_dashed" and table.iloc[0]["status"] == "below threshold"
    sugg = suggestion_table(feedback)
    assert [(r.list, r.text, r.label, r.notes) for r in sugg.itertuples()] == [
        ("deny (always tag)", "Kestrel", "HOSPITAL", 11)]  # the deleted phones all differ
    with pytest.raises(PermissionDenied):
        project_rule_feedback(store, "p", actor="ann")  # note text: admins only
    with pytest.raises(PermissionDenied):
        demote_rule(store, "p", "phone_dashed", actor="ann")

    assert apply_rule_policy(store, "p", actor="ada") == ["phone_dashed"]
    assert feedback_key(store, "p") != key  # the Model page recomputes after a demotion
    assert apply_rule_policy(store, "p", actor="ada") == []  # already demoted
    settings = repo.get_project(store, "p").settings
    assert settings["demoted_rules"] == ["phone_dashed"] and settings["restored_rules"] == []
    (event,) = list_events(store, action="rule.demote")
    assert (event.actor, event.entity_type, event.entity_id) == ("ada", "rule", "phone_dashed")
    assert event.after is not None and event.after["automatic"] is True
    assert (event.after["deleted"], event.after["decisions"], event.after["precision"]) == (22, 22, 0.0)
    assert event.before is not None and event.before["demoted_rules"] == []
    assert rule_table(project_rule_feedback(store, "p", actor="ada")).iloc[0]["status"] == "demoted"

    # The next prediction of the queue takes no span from the demoted rule.
    last = rows[11].doc_id
    predict_queue(store, "p", redo=True, actor="ada")
    layers = repo.get_document(store, last)
    assert layers.prediction is not None and layers.prediction.spans
    assert "rule:phone_dashed" not in {s.source for s in layers.prediction.spans}
    assert "rule:date_mdy_slash" in {s.source for s in layers.prediction.spans}

    # Undo from the Model page: audited, and the queue is re-predicted with the rule tagging again.
    with pytest.raises(StoreError, match="already demoted"):
        demote_rule(store, "p", "phone_dashed", actor="ada")
    result = set_rule_and_repredict(store, "p", "phone_dashed", "ada", demote=False)
    assert result == {"restored": ["phone_dashed"], "repredicted": 1}
    layers = repo.get_document(store, last)
    assert layers.prediction is not None
    assert "rule:phone_dashed" in {s.source for s in layers.prediction.spans}
    (undo,) = list_events(store, action="rule.restore")
    assert undo.actor == "ada" and undo.after is not None
    assert undo.after["demoted_rules"] == [] and undo.after["restored_rules"] == ["phone_dashed"]
    assert apply_rule_policy(store, "p", actor="ada") == []  # an admin's undo is not overturned
    with pytest.raises(StoreError, match="nothing to undo"):
        restore_rule(store, "p", "phone_dashed", actor="ada")
    # An admin can still demote it by hand; that takes it off the restored list.
    demote_rule(store, "p", "rule:phone_dashed", actor="ada")
    settings = repo.get_project(store, "p").settings
    assert settings["demoted_rules"] == ["phone_dashed"] and settings["restored_rules"] == []
    assert [e.action for e in list_events(store, entity_type="rule")] == [
        "rule.demote", "rule.restore", "rule.demote"]
