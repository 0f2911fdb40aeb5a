"""Record or compare what the English starter tags on a fixed corpus: prints JSON.

    .venv/bin/python bench/english_outputs.py --save before.json [--model DIR]
    .venv/bin/python bench/english_outputs.py --compare before.json [--model DIR]

A speed change to the tagging path must not change what it tags. This
records, per note, the predicted spans (offsets, label, source, score rounded
to 6 places) at bias 0 and at the model's recall bias, the token offsets and
the document log-probability, for: the shipped English challenge set, 200
generated dev-family notes (realistic genres and styles), the challenge set
and 100 of the notes in lower case and in capitals, and a few notes written to
stress the tokenizer (tabs, CRLF, no-break and zero-width spaces, URLs,
e-mails, non-Latin letters, emoji). ``--compare`` exits 1 on any difference
and names the first notes that differ (ids and offsets, never text).
``--model`` pins a model directory: the starter's cache key hashes the engine's
code, so after an engine edit ``ensure_starter`` would train a new starter
rather than reuse the one the snapshot was taken with.
The emissions' digest tells whether scores are bit-identical too (reported, not required).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.model import DeidModel  # noqa: E402
from deid_core.spans import Document  # noqa: E402
from deid_core.synthetic import REALISTIC, generate_notes  # noqa: E402
from deid_core.synthetic.starter import RECALL_BIAS_KEY, ensure_starter  # noqa: E402

CHALLENGE = ROOT / "tests" / "fixtures" / "english_challenge.jsonl"

STRESS = [
    "Pt seen by Dr.\tSmith\r\nFollow-up w/ PCP in 2wks.\r\n\r\nCall 617-555-0199 x204.",
    "Name:\u00a0John\u00a0O'Neil\u200b MRN:\u2060 12345678\ufeff DOB: 01/02/1960 (age 64)...",
    "Seen at https://portal.example.org/pt?id=993 ; e-mail jane.doe+icu@mail.example.com.",
    "Müller, José-María → transferred to São Paulo; ΑΘΗΝΑ clinic; 北京 hospital 😀 ok.",
    "BP 120/80, HR 80s, T 37.2C, SpO2 98%RA. \"quoted\" 'single' (paren) [brk] {brace} <ang>",
    "  leading spaces\n\n\n   \t  trailing\t \n-- dashes -- and—em–en ... ellipsis… 5mg/kg q6h PRN",
    "ALL CAPS LINE: SMITH, JOHN A. MD; PAGER #4521.\nlowercase line: smith john md pager 4521",
    "U.S.A. e.g. i.e. St. Mary's Hosp. Apt. 4B, 22 Baker St., Boston, MA 02115-1234.",
    "x" * 40 + " 1234567890123 a1b2c3 ABCdef abcDEF Mc'Donald's O’Brien's co-op 3rd 21st",
    "\t\n",
    "",
]


def corpus() -> list[Document]:
    challenge = [Document(d.id, d.text, (), dict(d.meta)) for d in read_jsonl(CHALLENGE)]
    notes = [Document(d.id, d.text, (), dict(d.meta)) for d in
             generate_notes(200, seed=424_242, families="dev", **REALISTIC)]
    docs = challenge + notes
    for doc in challenge + notes[:100]:
        for case, fn in (("lower", str.lower), ("upper", str.upper)):
            text = fn(doc.text)
            docs.append(Document(f"{doc.id}~{case}", text, (), dict(doc.meta)))
    docs += [Document(f"stress-{i}", text) for i, text in enumerate(STRESS)]
    return docs


def spans_of(pred: Any) -> list[list[Any]]:
    return [[s.start, s.end, s.label, s.source.split(":")[0] if s.source.startswith("crf:") else s.source,
             round(s.score, 6)] for s in pred.spans]


def record(model: DeidModel, docs: list[Document]) -> dict[str, Any]:
    recall_bias = float(model.metadata.get(RECALL_BIAS_KEY, 0.0))
    out: dict[str, Any] = {}
    exact = hashlib.sha256()
    for doc in docs:
        pred = model.predict(doc)
        enc = model.encode(doc)
        at_recall = model.decode(enc, recall_bias)
        exact.update(enc.emissions.tobytes())
        exact.update(enc.marginals.tobytes())
        out[doc.id] = {
            "tokens": hashlib.sha256(json.dumps([[t.start, t.end, t.line, t.line_start] for t in enc.tokens])
                                     .encode()).hexdigest()[:16],
            "sequences": len(enc.sentences),
            "logprob": round(pred.logprob, 6),
            "spans": spans_of(pred),
            "spans_at_recall_bias": spans_of(at_recall),
        }
    return {"model": model.version, "recall_bias": recall_bias, "n": len(docs),
            "emissions_sha256": exact.hexdigest(), "notes": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path)
    group.add_argument("--compare", type=Path)
    ap.add_argument("--model", type=Path, help="model directory (default: the English starter)")
    args = ap.parse_args()
    model = DeidModel.load(args.model or ensure_starter("en"))
    now = record(model, corpus())
    if args.save:
        args.save.write_text(json.dumps(now), encoding="utf-8")
        print(json.dumps({"saved": str(args.save), "notes": now["n"], "model": now["model"]}))
        return
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    differ = []
    for doc_id in sorted(set(before["notes"]) | set(now["notes"])):
        a, b = before["notes"].get(doc_id), now["notes"].get(doc_id)
        if a != b:
            fields = sorted(k for k in set(a or {}) | set(b or {}) if (a or {}).get(k) != (b or {}).get(k))
            differ.append({"id": doc_id, "fields": fields})
    report = {
        "notes": now["n"], "model_before": before["model"], "model_now": now["model"],
        "identical": not differ and before["model"] == now["model"],
        "emissions_bit_identical": before["emissions_sha256"] == now["emissions_sha256"],
        "differing_notes": len(differ), "first_differences": differ[:10],
    }
    print(json.dumps(report, indent=1))
    sys.exit(0 if report["identical"] else 1)


if __name__ == "__main__":
    main()
