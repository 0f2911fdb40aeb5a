#!/usr/bin/env python3
"""Turn the hand-written English challenge notes into the shared JSONL format.

Reads tests/fixtures/english_challenge.txt (notes with inline {{text|CODE}}
marks, written by hand for issue 12) and writes
tests/fixtures/english_challenge.jsonl; with ``--set 2`` the second, held-out
set (english_challenge_2.txt, written and scored before the rules were tuned
on it) to english_challenge_2.jsonl, and ``--set 3`` the third and ``--set 4``
the fourth (session 6 of issue 13, written and scored the same way), ``--set 5``
the fifth, ``--set 6`` the sixth, ``--set 7`` the seventh and ``--set 8`` the eighth
(session 7 of issue 13, likewise). One document per note with gold spans in i2b2 2014
labels and, in
``meta.categories``, each span's miss category (parallel to ``spans``) so that
a bench can report recall per category. The output is read back with
``deid_core.corpus.read_jsonl`` to check every offset.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def set_stem(n: int) -> str:
    """Set 1 is english_challenge.txt; set N is english_challenge_N.txt (as the bench reads them)."""
    return "english_challenge" if n == 1 else f"english_challenge_{n}"


CODES = {
    "D": ("DOCTOR", "clinician_name"),
    "R": ("PATIENT", "relative_name"),
    "P": ("PATIENT", "patient_surname"),
    "H": ("HOSPITAL", "facility"),
    "O": ("ORGANIZATION", "facility"),
    "C": ("CITY", "place"),
    "S": ("STATE", "place"),
    "U": ("STREET", "place"),
    "T": ("DATE", "date"),
    "F": ("PHONE", "phone"),
    "A": ("AGE", "other"),
    "M": ("MEDICALRECORD", "other"),
    "E": ("EMAIL", "phone"),
    "W": ("URL", "phone"),
}
MARK = re.compile(r"\{\{(.+?)\|([A-Z])\}\}")


def parse(source: str) -> list[dict]:
    notes: list[dict] = []
    current: dict | None = None
    lines: list[str] = []

    def close() -> None:
        if current is None:
            return
        raw = "\n".join(lines).strip("\n") + "\n"
        text, spans, categories, pos = [], [], [], 0
        length = 0
        for m in MARK.finditer(raw):
            text.append(raw[pos : m.start()])
            length += m.start() - pos
            piece, code = m.group(1), m.group(2)
            if code not in CODES:
                raise SystemExit(f"{current['id']}: unknown code {code!r}")
            label, category = CODES[code]
            spans.append({"start": length, "end": length + len(piece), "label": label, "text": piece})
            categories.append(category)
            text.append(piece)
            length += len(piece)
            pos = m.end()
        text.append(raw[pos:])
        body = "".join(text)
        if "{{" in body or "}}" in body:
            raise SystemExit(f"{current['id']}: unbalanced mark")
        current.update(text=body, spans=spans)
        current["meta"]["categories"] = categories
        notes.append(current)

    for line in source.splitlines():
        if line.startswith("#") and current is None:
            continue
        if line.startswith("=== "):
            close()
            ident, _, style = line[4:].partition("|")
            current = {"id": f"challenge-{ident.strip()}", "meta": {"style": style.strip(), "source": "hand-written"}}
            lines = []
        elif current is not None:
            lines.append(line)
    close()
    return notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--set", type=int, default=1, help="which challenge set to build (default 1)")
    stem = set_stem(ap.parse_args().set)
    source, target = FIXTURES / f"{stem}.txt", FIXTURES / f"{stem}.jsonl"
    if not source.is_file():
        raise SystemExit(f"{source.relative_to(ROOT)}: no such challenge set")
    notes = parse(source.read_text(encoding="utf-8"))
    with target.open("w", encoding="utf-8") as fh:
        for note in notes:
            fh.write(json.dumps(note, ensure_ascii=False) + "\n")
    docs = read_jsonl(target)  # validates offsets and span texts
    print(f"{len(docs)} notes, {sum(len(d.spans) for d in docs)} spans -> {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
