"""The evaluator against hand-computed cases: one per criterion and one per error category."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deid_core.errors import DeidError, DocumentMismatch, EmptyInput
from deid_core.evaluation import (
    char_prf,
    evaluate,
    format_report,
    relaxed_prf,
    spearman_logprob_f1,
    strict_prf,
    token_bounds,
    token_prf,
    tokenize_corpus,
)
from deid_core.evaluation.metrics import relaxed_counts, strict_counts
from deid_core.evaluation.taxonomy import classify_document
from deid_core.schemes import load_scheme
from deid_core.spans import Document, Span

# 0         1         2         3         4         5
# 012345678901234567890123456789012345678901234567890123456
TEXT = "Patient John Smith seen on 09/14/2067 at Mercy Hospital."
JOHN_SMITH = (8, 18)
DATE = (27, 37)
MERCY = (41, 55)


def doc(spans: list[tuple[int, int, str]], *, text: str = TEXT, doc_id: str = "d1", **meta) -> Document:
    return Document(doc_id, text, tuple(Span(s, e, lab) for s, e, lab in spans), meta)


def counts(result: dict) -> tuple[int, int, int]:
    return result["tp"], result["fp"], result["fn"]


# ---------------------------------------------------------------- strict


@pytest.mark.parametrize(
    "gold, pred, expected",
    [
        ([(8, 18, "PATIENT")], [(8, 18, "PATIENT")], (1, 0, 0)),
        ([(8, 18, "PATIENT")], [(8, 17, "PATIENT")], (0, 1, 1)),  # one char short
        ([(8, 18, "PATIENT")], [(8, 18, "DOCTOR")], (0, 1, 1)),  # wrong label
        ([(8, 18, "PATIENT")], [], (0, 0, 1)),
        ([], [(8, 18, "PATIENT")], (0, 1, 0)),
        ([(8, 18, "PATIENT"), (27, 37, "DATE")], [(27, 37, "DATE")], (1, 0, 1)),
    ],
)
def test_strict_counts(gold, pred, expected):
    assert counts(strict_prf([doc(gold)], [doc(pred)])) == expected


def test_strict_duplicate_prediction_is_a_false_positive():
    spans = (Span(8, 18, "PATIENT"), Span(8, 18, "PATIENT", source="rule:x"))
    pred = Document("d1", TEXT, spans)
    assert counts(strict_prf([doc([(8, 18, "PATIENT")])], [pred])) == (1, 1, 0)


def test_strict_precision_recall_f1_values():
    gold = doc([(8, 18, "PATIENT"), (27, 37, "DATE"), (41, 55, "HOSPITAL")])
    pred = doc([(8, 18, "PATIENT"), (27, 36, "DATE")])
    r = strict_prf([gold], [pred])
    assert (r["precision"], r["recall"]) == (0.5, pytest.approx(1 / 3))
    assert r["f1"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


# ---------------------------------------------------------------- relaxed


@pytest.mark.parametrize(
    "pred, expected",
    [
        ([(8, 18, "PATIENT")], (1, 0, 0)),
        ([(8, 16, "PATIENT")], (1, 0, 0)),  # end 2 chars short: allowed
        ([(8, 20, "PATIENT")], (1, 0, 0)),  # end 2 chars long: allowed
        ([(8, 15, "PATIENT")], (0, 1, 1)),  # 3 chars short: not allowed
        ([(8, 21, "PATIENT")], (0, 1, 1)),  # 3 chars long: not allowed
        ([(9, 18, "PATIENT")], (0, 1, 1)),  # start must match exactly
        ([(8, 17, "DOCTOR")], (0, 1, 1)),  # label must match
        ([(8, 17, "PATIENT"), (8, 19, "PATIENT")], (1, 1, 0)),  # gold credited once
    ],
)
def test_relaxed_two_character_end_tolerance(pred, expected):
    gold = [doc([(8, 18, "PATIENT")])]
    assert counts(relaxed_prf(gold, [doc(pred)])) == expected


def test_relaxed_pairs_closest_ends_first():
    # Gold ends 10 and 12, predictions end 12 and 14 (same start and label).
    # The exact pair 12-12 is taken first; 10 and 14 are then 4 apart, so one
    # gold and one prediction stay unmatched: a prediction is never credited
    # for a near gold span when it matches another gold span exactly.
    gold = [Span(0, 10, "ID"), Span(0, 12, "ID")]
    pred = [Span(0, 12, "ID"), Span(0, 14, "ID")]
    assert relaxed_counts(gold, pred, 2) == {"ID": [1, 1, 1]}


def test_relaxed_chars_is_configurable():
    gold = [doc([(8, 18, "PATIENT")])]
    pred = [doc([(8, 15, "PATIENT")])]
    assert counts(relaxed_prf(gold, pred, relaxed_chars=3)) == (1, 0, 0)
    assert counts(relaxed_prf(gold, pred, relaxed_chars=0)) == (0, 1, 1)


# ---------------------------------------------------------------- token
# Tokens of TEXT: Patient | John | Smith | seen | on | 09 | / | 14 | / | 2067 | at | Mercy | Hospital | .


@pytest.mark.parametrize(
    "gold, pred, expected",
    [
        ([(8, 18, "PATIENT")], [(8, 18, "PATIENT")], (2, 0, 0)),
        ([(8, 18, "PATIENT")], [(8, 14, "PATIENT")], (2, 0, 0)),  # "John S": Smith partly covered
        ([(8, 18, "PATIENT")], [(9, 11, "PATIENT")], (1, 0, 1)),  # inside "John" only
        ([(8, 18, "PATIENT")], [(8, 18, "DOCTOR")], (0, 2, 2)),  # wrong label: fp and fn
        ([(27, 37, "DATE")], [(27, 29, "DATE"), (33, 37, "DATE")], (2, 0, 3)),  # 09 and 2067 of 5
        ([(41, 55, "HOSPITAL")], [(41, 47, "HOSPITAL")], (1, 0, 1)),  # "Mercy " stops at Hospital
        ([], [(12, 13, "PATIENT")], (0, 0, 0)),  # whitespace-only span covers no token
    ],
)
def test_token_counts(gold, pred, expected):
    assert counts(token_prf([doc(gold)], [doc(pred)])) == expected


def test_token_cache_is_used_instead_of_retokenising():
    gold, pred = [doc([(8, 18, "PATIENT")])], [doc([(8, 12, "PATIENT")])]
    assert counts(token_prf(gold, pred)) == (1, 0, 1)
    cache = tokenize_corpus(gold)
    assert counts(token_prf(gold, pred, tokens=cache)) == (1, 0, 1)
    # One token for the whole name: the cache, not the tokenizer, decides.
    assert counts(token_prf(gold, pred, tokens={"d1": ([8], [18])})) == (1, 0, 0)


def test_token_bounds_accepts_tokenized_tokens_and_bounds():
    from deid_core.engine.tokenize import tokenize

    tk = tokenize(TEXT)
    expected = ([t.start for t in tk.tokens], [t.end for t in tk.tokens])
    assert token_bounds(tk) == token_bounds(tk.tokens) == token_bounds(expected) == expected


# ---------------------------------------------------------------- micro, macro, categories, HIPAA


def test_micro_and_macro_differ():
    # DATE: 3 gold, 3 found. PATIENT: 1 gold, missed.
    text = "a 01/02 b 03/04 c 05/06 d John"
    gold = doc([(2, 7, "DATE"), (10, 15, "DATE"), (18, 23, "DATE"), (26, 30, "PATIENT")], text=text)
    pred = doc([(2, 7, "DATE"), (10, 15, "DATE"), (18, 23, "DATE")], text=text)
    strict = evaluate([gold], [pred])["strict"]
    assert strict["micro"]["precision"] == 1.0
    assert strict["micro"]["recall"] == 0.75
    assert strict["micro"]["f1"] == pytest.approx(2 * 0.75 / 1.75)
    assert strict["macro"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "labels": 2}
    assert strict["per_label"]["PATIENT"] == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 0, "fn": 1, "support": 1
    }
    assert strict["per_label"]["DATE"]["support"] == 3


def test_macro_document_averages_records():
    # Paper 004's record-level macro: doc1 F1 = 1, doc2 F1 = 0 -> 0.5; micro over 3 spans differs.
    gold = [doc([(8, 18, "PATIENT"), (27, 37, "DATE")], doc_id="a"), doc([(41, 55, "HOSPITAL")], doc_id="b")]
    pred = [doc([(8, 18, "PATIENT"), (27, 37, "DATE")], doc_id="a"), doc([], doc_id="b")]
    strict = evaluate(gold, pred)["strict"]
    assert strict["macro_document"]["f1"] == 0.5
    assert strict["micro"]["f1"] == pytest.approx(0.8)


def test_per_category_and_hipaa_subset():
    scheme = load_scheme("i2b2_2014")  # PATIENT: NAME, HIPAA; DOCTOR: NAME, not HIPAA; DATE: HIPAA
    text = "Pt John seen by Dr Ames on 01/02 and 03/04"
    gold = doc([(3, 7, "PATIENT"), (19, 23, "DOCTOR"), (27, 32, "DATE"), (37, 42, "DATE")], text=text)
    pred = doc([(3, 7, "DOCTOR"), (19, 23, "DOCTOR"), (27, 32, "DATE")], text=text)
    strict = evaluate([gold], [pred], scheme=scheme)["strict"]
    # NAME: DOCTOR tp 1 fp 1; PATIENT fn 1 -> tp 1, fp 1, fn 1.
    assert counts(strict["per_category"]["NAME"]) == (1, 1, 1)
    assert counts(strict["per_category"]["DATE"]) == (1, 0, 1)
    assert strict["per_category"]["NAME"]["support"] == 2
    # HIPAA drops DOCTOR entirely: PATIENT fn 1, DATE tp 1 fn 1.
    assert counts(strict["hipaa"]["micro"]) == (1, 0, 2)
    assert strict["hipaa"]["macro"]["labels"] == 2
    assert counts(strict_prf([gold], [pred], labels=scheme.hipaa_labels())) == (1, 0, 2)


def test_no_hipaa_block_without_scheme_marks():
    result = evaluate([doc([(8, 18, "PATIENT")])], [doc([(8, 18, "PATIENT")])])
    assert "hipaa" not in result["strict"]
    assert result["strict"]["per_category"] == {}


# ---------------------------------------------------------------- characters (leak view)


@pytest.mark.parametrize(
    "gold, pred, precision, recall",
    [
        ([(8, 18, "PATIENT")], [(13, 23, "PATIENT")], 0.5, 0.5),  # half overlap
        ([(8, 18, "PATIENT")], [(8, 18, "DOCTOR")], 1.0, 1.0),  # label does not matter
        ([(8, 18, "PATIENT")], [(8, 12, "PATIENT")], 1.0, 0.4),  # "John": the space and Smith leak
        ([(8, 18, "PATIENT")], [(8, 12, "X"), (13, 18, "X")], 1.0, 0.9),  # only the space missed
        ([(8, 18, "PATIENT")], [(8, 15, "X"), (10, 18, "X")], 1.0, 1.0),  # overlapping preds once
        ([(8, 18, "PATIENT"), (27, 37, "DATE")], [], 0.0, 0.0),
    ],
)
def test_char_prf(gold, pred, precision, recall):
    r = char_prf([doc(gold)], [doc(pred)])
    assert (r["precision"], r["recall"]) == (pytest.approx(precision), pytest.approx(recall))
    assert r["missed_share"] == pytest.approx(1 - recall)


def test_char_per_label_and_hipaa_leaks():
    scheme = load_scheme("i2b2_2014")
    gold = doc([(8, 18, "PATIENT"), (27, 37, "DATE"), (41, 55, "HOSPITAL")])
    pred = doc([(8, 12, "PATIENT"), (27, 37, "DATE")])
    char = evaluate([gold], [pred], scheme=scheme)["char"]
    assert char["per_label"]["PATIENT"] == {"recall": 0.4, "gold_chars": 10, "missed_chars": 6}
    assert char["per_label"]["HOSPITAL"]["missed_chars"] == 14
    assert char["hipaa"] == {"recall": 0.7, "gold_chars": 20, "missed_chars": 6}  # HOSPITAL not HIPAA
    assert (char["gold_chars"], char["missed_chars"]) == (34, 20)


# ---------------------------------------------------------------- error taxonomy


@pytest.mark.parametrize(
    "gold, pred, category",
    [
        ([(8, 18, "PATIENT")], [(8, 18, "DOCTOR")], "type"),
        ([(8, 18, "PATIENT")], [(8, 12, "PATIENT")], "extent:short"),
        ([(8, 18, "PATIENT")], [(0, 18, "PATIENT")], "extent:long"),
        ([(8, 18, "PATIENT")], [(13, 23, "PATIENT")], "extent:short&long"),
        ([(8, 18, "PATIENT")], [(13, 23, "DOCTOR")], "type&extent"),
        ([(8, 18, "PATIENT")], [(27, 37, "DATE")], "spurious+missing"),
        ([(8, 18, "PATIENT")], [], "missing"),
        ([], [(27, 37, "DATE")], "spurious"),
    ],
)
def test_error_categories(gold, pred, category):
    g = [Span(s, e, lab) for s, e, lab in gold]
    p = [Span(s, e, lab) for s, e, lab in pred]
    found = sorted(c for c, _, _ in classify_document(g, p))
    assert found == sorted(category.split("+"))


def test_error_report_counts_examples_and_confusion():
    gold = [
        doc([(8, 18, "PATIENT"), (27, 37, "DATE"), (41, 55, "HOSPITAL")], doc_id="a"),
        doc([(8, 18, "PATIENT")], doc_id="b"),
    ]
    pred = [
        doc([(8, 18, "DOCTOR"), (27, 35, "DATE"), (0, 7, "PROFESSION")], doc_id="a"),
        doc([(8, 12, "PATIENT")], doc_id="b"),
    ]
    errors = evaluate(gold, pred)["errors"]
    assert errors["type"]["count"] == 1
    assert errors["type"]["confusion"] == {"PATIENT -> DOCTOR": 1}
    assert errors["type"]["examples"] == [{"doc_id": "a", "gold": [8, 18, "PATIENT"], "pred": [8, 18, "DOCTOR"]}]
    assert errors["extent"]["count"] == 2
    assert errors["extent"]["short"]["count"] == 2
    assert errors["extent"]["long"]["count"] == errors["extent"]["short&long"]["count"] == 0
    assert errors["spurious"]["examples"] == [{"doc_id": "a", "gold": None, "pred": [0, 7, "PROFESSION"]}]
    assert errors["missing"]["by_label"] == {"HOSPITAL": 1}
    assert errors["missing"]["examples"][0]["gold"] == [41, 55, "HOSPITAL"]


def test_error_examples_are_capped_and_text_only_on_request():
    gold = [doc([(8, 18, "PATIENT")], doc_id=str(i)) for i in range(4)]
    pred = [doc([], doc_id=str(i)) for i in range(4)]
    errors = evaluate(gold, pred, max_examples=2)["errors"]
    assert errors["missing"]["count"] == 4 and len(errors["missing"]["examples"]) == 2
    assert "John" not in json.dumps(errors)
    shown = evaluate(gold, pred, include_text=True)["errors"]["missing"]["examples"][0]
    assert shown["gold_text"] == "John Smith" and shown["pred_text"] is None


# ---------------------------------------------------------------- Spearman


def _f1_ladder() -> tuple[list[Document], list[Document]]:
    """Four documents whose strict F1 is 1, 2/3, 0.5, 0 (gold has 2 spans each)."""
    gold_spans = [(8, 18, "PATIENT"), (27, 37, "DATE")]
    preds = [
        gold_spans,  # F1 1
        [(8, 18, "PATIENT"), (27, 37, "DATE"), (41, 55, "HOSPITAL")],  # P 2/3 R 1 -> 0.8
        [(8, 18, "PATIENT")],  # P 1 R 0.5 -> 2/3
        [],  # 0
    ]
    gold = [doc(gold_spans, doc_id=str(i)) for i in range(4)]
    pred = [doc(p, doc_id=str(i), logprob=-float(i)) for i, p in enumerate(preds)]
    return gold, pred


def test_spearman_monotone_is_one():
    gold, pred = _f1_ladder()
    result = evaluate(gold, pred)
    assert result["spearman_logprob_f1"] == pytest.approx(1.0)
    assert result["spearman_documents"] == 4
    reversed_pred = [p.with_meta(logprob=float(i)) for i, p in enumerate(pred)]
    assert evaluate(gold, reversed_pred)["spearman_logprob_f1"] == pytest.approx(-1.0)


@pytest.mark.parametrize(
    "logprobs, f1s",
    [
        ([-1.0, -2.0], [1.0, 0.5]),  # fewer than 3 documents
        ([-1.0, None, -3.0, None], [1.0, 0.5, 0.2, 0.0]),  # only 2 carry a log-probability
        ([-1.0, -2.0, -3.0], [1.0, 1.0, 1.0]),  # F1 constant
        ([-1.0, -1.0, -1.0], [1.0, 0.5, 0.0]),  # log-probability constant
    ],
)
def test_spearman_null_cases(logprobs, f1s):
    assert spearman_logprob_f1(logprobs, f1s)[0] is None


def test_spearman_ignores_non_numeric_logprob():
    gold, pred = _f1_ladder()
    pred = [p.with_meta(logprob=True) if i < 2 else p for i, p in enumerate(pred)]
    result = evaluate(gold, pred)
    assert result["spearman_logprob_f1"] is None and result["spearman_documents"] == 2


# ---------------------------------------------------------------- pairing and bad input


def test_missing_prediction_counts_as_no_spans():
    gold = [doc([(8, 18, "PATIENT")], doc_id="a"), doc([(27, 37, "DATE")], doc_id="b")]
    result = evaluate(gold, [doc([(8, 18, "PATIENT")], doc_id="a")])
    assert counts(result["strict"]["micro"]) == (1, 0, 1)
    assert result["documents"] == 2


@pytest.mark.parametrize(
    "gold, pred, fragment",
    [
        ([doc([], doc_id="a")], [doc([], doc_id="zz")], "'zz'"),
        ([doc([], doc_id="a")], [doc([], doc_id="a", text=TEXT.replace("John", "Joan"))], "offset 10"),
        ([doc([], doc_id="a")], [doc([], doc_id="a", text=TEXT + " More")], "lengths"),
        ([doc([], doc_id="a"), doc([], doc_id="a")], [], "twice"),
        ([doc([], doc_id="a")], [doc([], doc_id="a"), doc([], doc_id="a")], "twice"),
    ],
)
def test_mismatched_corpora_raise_without_quoting_text(gold, pred, fragment):
    with pytest.raises(DocumentMismatch) as info:
        evaluate(gold, pred)
    message = str(info.value)
    assert fragment in message
    assert isinstance(info.value, DeidError)
    for word in ("John", "Joan", "Patient", "Mercy", "More"):
        assert word not in message


# ---------------------------------------------------------------- contract and report


def test_json_contract_keys():
    scheme = load_scheme("i2b2_2014")
    gold, pred = _f1_ladder()
    result = evaluate(gold, pred, scheme=scheme)
    for crit in ("strict", "relaxed", "token"):
        block = result[crit]
        assert set(block["micro"]) >= {"precision", "recall", "f1", "tp", "fp", "fn"}
        assert set(block["macro"]) >= {"precision", "recall", "f1"}
        for row in block["per_label"].values():
            assert set(row) >= {"precision", "recall", "f1", "tp", "fp", "fn", "support"}
        assert "per_category" in block and "micro" in block["hipaa"]
    assert set(result["char"]) >= {"precision", "recall", "f1"}
    for key in ("type", "extent", "spurious", "missing"):
        assert {"count", "examples"} <= set(result["errors"][key])
    for kind in ("short", "long", "short&long"):
        assert {"count", "examples"} <= set(result["errors"]["extent"][kind])
    assert "spearman_logprob_f1" in result and result["documents"] == 4
    assert json.loads(json.dumps(result)) == result


def test_strict_relaxed_token_char_functions_agree_with_evaluate():
    gold, pred = _f1_ladder()
    result = evaluate(gold, pred)
    assert strict_prf(gold, pred) == result["strict"]["micro"]
    assert relaxed_prf(gold, pred) == result["relaxed"]["micro"]
    assert token_prf(gold, pred) == result["token"]["micro"]
    assert char_prf(gold, pred) == {k: v for k, v in result["char"].items() if k != "per_label"}


def test_empty_corpus_and_perfect_empty_documents():
    # No gold at all is an error (it used to score P = R = F1 = 1.0); a note without PHI is not.
    with pytest.raises(EmptyInput):
        evaluate([], [])
    result = evaluate([doc([])], [doc([])])
    assert result["strict"]["micro"]["f1"] == result["char"]["recall"] == 1.0


def test_format_report_shows_figures_but_no_text():
    scheme = load_scheme("i2b2_2014")
    gold = doc([(8, 18, "PATIENT"), (27, 37, "DATE"), (41, 55, "HOSPITAL")])
    pred = doc([(8, 12, "PATIENT"), (27, 37, "DATE")], logprob=-1.0)
    report = format_report(evaluate([gold], [pred], scheme=scheme))
    assert "strict micro" in report and "HIPAA" in report and "PHI characters missed: 20 of 34" in report
    assert "extent 1 (short 1" in report and "missing 1" in report
    for word in ("John", "Mercy", "Patient"):
        assert word not in report
    with_text = format_report(evaluate([gold], [pred], scheme=scheme, include_text=True))
    assert "'Mercy Hospital'" in with_text


def test_progress_callback_reaches_one():
    seen: list[tuple[str, float]] = []
    gold, pred = _f1_ladder()
    evaluate(gold, pred, progress=lambda msg, frac: seen.append((msg, frac)))
    assert seen and seen[-1][1] == 1.0


# ---------------------------------------------------------------- properties


_span_lists = st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 6), st.sampled_from(["A", "B"])),
    max_size=6,
).map(lambda xs: [Span(s, s + n, lab) for s, n, lab in xs])


@settings(max_examples=200, deadline=None)
@given(gold=_span_lists, pred=_span_lists)
def test_counts_are_consistent(gold, pred):
    strict = strict_counts(gold, pred)
    relaxed = relaxed_counts(gold, pred, 2)
    for table in (strict, relaxed):
        assert sum(r[0] + r[2] for r in table.values()) == len(gold)
        assert sum(r[0] + r[1] for r in table.values()) == len(pred)
    assert sum(r[0] for r in relaxed.values()) >= sum(r[0] for r in strict.values())
    # Every non-matching prediction is classified once; missing golds on top.
    errors = classify_document(gold, pred)
    predicted_errors = [e for e in errors if e[2] is not None]
    assert len(predicted_errors) == sum(r[1] for r in strict.values())
