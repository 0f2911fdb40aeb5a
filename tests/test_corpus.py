"""The Span/Document types and the JSONL reader/writer, bad input included."""

from __future__ import annotations

import json

import pytest

from deid_core.corpus import read_jsonl, write_jsonl
from deid_core.errors import CorpusFormatError, InvalidSpan
from deid_core.spans import Document, Span, check_no_overlap, find_overlap

TEXT = "Seen by Dr. Smith on 2067-09-14."


def _line(doc: dict) -> str:
    return json.dumps(doc, ensure_ascii=False) + "\n"


def good_doc(doc_id: str = "d1") -> dict:
    return {
        "id": doc_id,
        "text": TEXT,
        "spans": [
            {"start": 12, "end": 17, "label": "DOCTOR", "text": "Smith"},
            {"start": 21, "end": 31, "label": "DATE", "text": "2067-09-14"},
        ],
        "meta": {"split": "fixture"},
    }


@pytest.mark.parametrize(
    "args",
    [(-1, 3, "X"), (3, 3, "X"), (5, 2, "X"), (0, 2, "")],
)
def test_span_rejects_impossible_offsets(args):
    with pytest.raises(InvalidSpan):
        Span(*args)


def test_document_rejects_span_past_text():
    with pytest.raises(InvalidSpan, match="ends past the text"):
        Document("d", "short", (Span(0, 10, "X"),))


def test_overlap_detection():
    spans = [Span(0, 5, "A"), Span(4, 8, "B"), Span(10, 12, "C")]
    assert find_overlap(spans) == (spans[0], spans[1])
    with pytest.raises(InvalidSpan, match="overlap"):
        check_no_overlap(spans, doc_id="x")
    assert find_overlap([Span(0, 5, "A"), Span(5, 8, "B")]) is None


def test_round_trip(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(_line(good_doc("a")) + _line(good_doc("b")), encoding="utf-8")
    docs = read_jsonl(path)
    assert [d.id for d in docs] == ["a", "b"]
    assert docs[0].spans[0] == Span(12, 17, "DOCTOR", "gold", 1.0)
    out = tmp_path / "out.jsonl"
    assert write_jsonl(out, docs) == 2
    again = read_jsonl(out)
    assert again == docs


def test_bom_text_is_kept(tmp_path):
    text = "\ufeffNombre: Ana."
    raw = {"id": "b", "text": text, "spans": [{"start": 9, "end": 12, "label": "N", "text": "Ana"}]}
    path = tmp_path / "bom.jsonl"
    path.write_text(_line(raw), encoding="utf-8")
    (doc,) = read_jsonl(path)
    assert doc.text[0] == "\ufeff" and doc.span_text(doc.spans[0]) == "Ana"


def _bad(tmp_path, lines: list[str] | bytes):
    path = tmp_path / "bad.jsonl"
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(CorpusFormatError) as info:
        read_jsonl(path)
    return info.value, path


def test_malformed_json_names_file_and_line(tmp_path):
    err, path = _bad(tmp_path, [_line(good_doc("a")), '{"id": "b", "text": \n'])
    assert err.line == 2 and err.path == str(path)
    assert "line 2" in str(err) and "malformed JSON" in str(err)


def test_non_utf8_names_line(tmp_path):
    data = _line(good_doc("a")).encode() + b'{"id": "b", "text": "caf\xe9"}\n'
    err, _ = _bad(tmp_path, data)
    assert err.line == 2 and "UTF-8" in str(err)


def test_offsets_out_of_range(tmp_path):
    doc = good_doc()
    doc["spans"][1]["end"] = 999
    err, _ = _bad(tmp_path, [_line(doc)])
    assert err.line == 1 and err.span_index == 1 and "out of range" in str(err)


def test_span_text_mismatch_does_not_quote_text(tmp_path):
    doc = good_doc()
    doc["spans"][0]["text"] = "Jones"
    err, _ = _bad(tmp_path, [_line(doc)])
    assert err.span_index == 0 and "does not match" in str(err)
    assert "Smith" not in str(err) and "Jones" not in str(err)


def test_overlapping_and_duplicate_spans(tmp_path):
    doc = good_doc()
    doc["spans"].append({"start": 14, "end": 20, "label": "X", "text": TEXT[14:20]})
    err, _ = _bad(tmp_path, [_line(doc)])
    assert "overlap" in str(err)
    doc = good_doc()
    doc["spans"].append(dict(doc["spans"][0]))
    err, _ = _bad(tmp_path, [_line(doc)])
    assert "duplicate span" in str(err)


def test_missing_fields_and_duplicate_ids(tmp_path):
    err, _ = _bad(tmp_path, ['{"text": "x"}\n'])
    assert "id" in str(err)
    err, _ = _bad(tmp_path, [_line(good_doc("a")), _line(good_doc("a"))])
    assert "duplicate document id" in str(err) and err.line == 2
    err, _ = _bad(tmp_path, ['[1, 2]\n'])
    assert "JSON object" in str(err)


def test_write_is_atomic_on_failure(tmp_path):
    out = tmp_path / "keep.jsonl"
    out.write_text("previous\n", encoding="utf-8")

    def docs():
        yield Document("a", "x")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl(out, docs())
    assert out.read_text(encoding="utf-8") == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.jsonl"]
