"""Review view-model: encoded cache, model view at a bias, drafts that follow the model."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from deid_core.spans import Document, Span
from deid_core.ui.editing import EditState, delete_span
from deid_core.ui.review import (
    ENCODED_CACHE_SIZE,
    encoded_for,
    follow_model,
    model_view,
)


@dataclass
class _Pred:
    spans: tuple
    logprob: float = -3.0
    logprob_per_token: float = -0.5

    def near_misses(self, threshold):
        return [Span(20, 23, "CITY", "crf:t", 0.3)] if threshold <= 0.3 else []


class CountingModel:
    """Test double for DeidModel: counts encodes; decode marks more PHI at lower bias."""

    version = "t1"

    def __init__(self):
        self.encodes = 0

    def encode(self, doc):
        self.encodes += 1
        return doc.id

    def decode(self, encoded, bias=0.0):
        spans = [Span(0, 3, "PATIENT", "crf:t1", 0.95)]
        if bias < 0:
            spans.append(Span(8, 12, "DATE", "crf:t1", 0.55))
        return _Pred(tuple(spans))


def test_encoded_cache_is_an_lru():
    model, cache = CountingModel(), {}
    docs = [Document(f"d{i}", "x") for i in range(ENCODED_CACHE_SIZE + 1)]
    for d in docs:
        encoded_for(cache, model, d)
    assert model.encodes == len(docs) and len(cache) == ENCODED_CACHE_SIZE
    encoded_for(cache, model, docs[-1])  # cached
    assert model.encodes == len(docs)
    encoded_for(cache, model, docs[0])  # evicted first, so encoded again
    assert model.encodes == len(docs) + 1


@pytest.mark.parametrize("bias, n_spans", [(0.0, 1), (-1.0, 2)])
def test_model_view(bias, n_spans):
    view = model_view(CountingModel(), "d1", bias)
    assert len(view.spans) == n_spans and view.bias == bias and view.model_version == "t1"
    assert [s.label for s in view.near_misses] == ["CITY"]
    assert sum(1 for s in view.spans if s.score < 0.8) == n_spans - 1


def test_untouched_draft_follows_the_bias_but_edits_stay():
    at0 = model_view(CountingModel(), "d1", 0.0).spans
    at_neg = model_view(CountingModel(), "d1", -1.0).spans
    state = follow_model(None, at0, None)
    assert state.spans == at0
    moved = follow_model(state, at_neg, None)
    assert moved.spans == at_neg  # untouched: follows the model
    edited = delete_span(moved, 0, 3)
    assert follow_model(edited, at0, None) is edited  # edited: kept
    reviewed = [Span(0, 3, "DOCTOR", "human:rita")]
    assert follow_model(None, at_neg, reviewed).spans == tuple(reviewed)  # reviewed layer wins
    assert isinstance(follow_model(None, (), None), EditState)


def test_encoded_cache_tells_same_id_different_text_apart():
    model, cache = CountingModel(), {}
    encoded_for(cache, model, Document("d1", "one text"))
    encoded_for(cache, model, Document("d1", "another text"))
    assert model.encodes == 2


def test_hints_for_a_stored_layer_include_the_live_models_extra_spans():
    from deid_core.ui.review import hints_for

    live = model_view(CountingModel(), "d1", -1.0)  # PATIENT 0..3, DATE 8..12, near miss 20..23
    shown = [Span(0, 4, "PATIENT", "import")]
    assert [(s.start, s.label) for s in hints_for(shown, live)] == [(8, "DATE"), (20, "CITY")]
    assert hints_for(list(live.spans), live) == live.near_misses


@pytest.mark.parametrize(
    ("text", "quiet"),
    [
        ("Chloride 104 (98-107) mmol/L", ["98", "107"]),  # a reference range
        ("Pain 7/10 today", ["7", "10"]),  # a score
        ("BP 120/80, HR 72", ["120", "80"]),  # a blood pressure; "72" stands alone
        ("K 4.1 mmol/L", ["4", "1"]),  # a decimal lab value
        ("range 98 - 107", ["98", "107"]),  # a range with spaces around the dash
        ("Age 107, seen in room 12", []),  # numbers on their own stay possible misses
        ("Seen on 3/14/2067", []),  # a date: three parts
        ("DOB 2067-07-14", []),  # an ISO date
        ("Call 555-123-4567", []),  # a phone number
        ("MRN 1234567 (old 7654321)", []),  # identifiers
    ],
)
def test_numeric_context_tokens(text, quiet):
    from deid_core.engine.tokenize import tokenize
    from deid_core.ui.review import numeric_context_tokens

    got = numeric_context_tokens(text, tokenize(text).tokens)
    assert [text[a:b] for a, b in got] == quiet
