"""Synthetic note generator: exact gold spans, determinism, patient consistency, CLI."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from deid_core.cli import main
from deid_core.corpus import document_to_dict, read_jsonl
from deid_core.engine.tagging import alignment_upper_bound
from deid_core.engine.tokenize import tokenize
from deid_core.errors import UnsupportedFormat
from deid_core.schemes import load_scheme
from deid_core.spans import find_overlap
from deid_core.synthetic import (
    GENERATOR,
    KINDS,
    available_kinds,
    generate_notes,
    iter_notes,
    load_templates,
)
from deid_core.synthetic.people import make_patient, timeline
from deid_core.synthetic.templates import Section, Templates, check_templates, parse

N_CORPUS = 300


@pytest.fixture(scope="module")
def corpus():
    return generate_notes(N_CORPUS, seed=11)


def _dump(docs) -> str:
    return json.dumps([document_to_dict(d) for d in docs], sort_keys=True)


def _outside_spans(doc) -> str:
    """The note with every gold span blanked out: what a model must leave alone."""
    chars = list(doc.text)
    for s in doc.spans:
        chars[s.start : s.end] = " " * (s.end - s.start)
    return "".join(chars)


# ---------------------------------------------------------------- determinism


def test_same_seed_gives_identical_corpus():
    assert _dump(generate_notes(40, seed=7)) == _dump(generate_notes(40, seed=7))


@pytest.mark.parametrize("a,b", [(0, 1), (1, 2), (7, 70)])
def test_different_seeds_give_different_corpora(a, b):
    da, db = generate_notes(10, seed=a), generate_notes(10, seed=b)
    assert [d.text for d in da] != [d.text for d in db]
    assert all(x.text != y.text for x, y in zip(da, db))


def test_shorter_corpus_is_a_prefix_of_a_longer_one():
    assert _dump(generate_notes(13, seed=5)) == _dump(generate_notes(30, seed=5)[:13])


def test_iter_notes_matches_generate_notes_and_streams():
    assert _dump(iter_notes(12, seed=3)) == _dump(generate_notes(12, seed=3))
    # A huge n is fine when consumed lazily: nothing is built up front.
    first = list(itertools.islice(iter_notes(10**9, seed=3), 2))
    assert _dump(first) == _dump(generate_notes(2, seed=3))


_HASH_SCRIPT = (
    "import hashlib, json; from deid_core.synthetic import generate_notes; "
    "from deid_core.corpus import document_to_dict; "
    "docs = generate_notes(15, seed=4); "
    "print(hashlib.sha256(json.dumps([document_to_dict(d) for d in docs], sort_keys=True)"
    ".encode()).hexdigest())"
)


def test_output_does_not_depend_on_hash_randomisation():
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run(
            [sys.executable, "-c", _HASH_SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        digests.add(out.stdout.strip())
    here = hashlib.sha256(_dump(generate_notes(15, seed=4)).encode()).hexdigest()
    assert digests == {here}


# ---------------------------------------------------------------- spans


def test_spans_are_nonempty_trimmed_and_inside_text(corpus):
    for doc in corpus:
        assert doc.spans, doc.id
        for s in doc.spans:
            value = doc.text[s.start : s.end]
            assert value and value == value.strip(), (doc.id, s)
            assert "\n" not in value, (doc.id, s)


def test_spans_do_not_overlap(corpus):
    assert [d.id for d in corpus if find_overlap(d.spans) is not None] == []


def test_every_span_aligns_with_token_boundaries(corpus):
    worst = min(alignment_upper_bound(tokenize(d.text).tokens, d.spans) for d in corpus)
    assert worst == 1.0


def test_labels_are_i2b2_2014_and_all_appear(corpus):
    scheme = set(load_scheme("i2b2_2014").names)
    seen = Counter(s.label for d in corpus for s in d.spans)
    assert set(seen) <= scheme
    assert len(seen) >= 20
    assert set(seen) == scheme  # every one of the 28 labels, in 300 notes


def test_all_four_kinds_appear(corpus):
    assert {d.meta["kind"] for d in corpus} == set(KINDS)


def test_some_ages_are_over_89(corpus):
    ages = [int(d.text[s.start : s.end]) for d in corpus for s in d.spans if s.label == "AGE" and d.text[s.start : s.end].isdigit()]
    assert any(a > 89 for a in ages)
    assert any(a < 60 for a in ages)


@pytest.mark.parametrize(
    "pattern",
    [
        r"/\d{1,2}/\d{4}\b",  # 09/14/2067, 9/14/2067
        r"\b\d{4}-\d{2}-\d{2}\b",  # ISO
        r"\b(January|February|March|April|May|June|July|August|September|October|November|December) \d{1,2}, \d{4}\b",
        r"\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b",
        r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec) \d{1,2}, \d{4}$",
        r"^\d{1,2}/\d{1,2}$",  # 9/14
        r"^(January|February|March|April|May|June|July|August|September|October|November|December)$",  # "in March"
    ],
)
def test_date_formats_vary(corpus, pattern):
    dates = [d.text[s.start : s.end] for d in corpus for s in d.spans if s.label == "DATE"]
    assert any(re.search(pattern, x) for x in dates), pattern


@pytest.mark.parametrize(
    "label,pattern",
    [
        ("PHONE", r"^\(\d{3}\) \d{3}-\d{4}$"),
        ("EMAIL", r"^[\w.]+@[\w.]+\.\w+$"),
        ("IPADDR", r"^\d{1,3}(\.\d{1,3}){3}$"),
        ("URL", r"^(https?://|www\.)"),
        ("SSN", r"^\d{3}-\d{2}-\d{4}$"),
        ("ZIP", r"^\d{5}(-\d{4})?$"),
        ("DOCTOR", r"^[A-Z]\. [A-Z]"),  # "J. Smith"
        ("DOCTOR", r"^[A-Z]{3}$"),  # initials
        ("PATIENT", r"^[\w'-]+, [\w'-]+$"),  # "Smith, John"
        ("HOSPITAL", r"^[A-Z]{2,6}$"),  # initials: "transferred from SGH"
        ("AGE", r"^[a-z]+(-[a-z]+)?$"),  # "sixty-seven"
        ("DOCTOR", r"^[a-z]+$"),  # shorthand: "d/w dr smith"
    ],
)
def test_value_shapes(corpus, label, pattern):
    values = [d.text[s.start : s.end] for d in corpus for s in d.spans if s.label == label]
    assert any(re.search(pattern, v) for v in values), (label, pattern)


# ---------------------------------------------------------------- distractors


@pytest.mark.parametrize(
    "pattern",
    [
        r"\b\d+(\.\d+)? mg\b",  # dosages
        r"\bNa \d{3}\b|\bSodium  \d{3}\b",  # lab values
        r"\bBP \d{2,3}/\d{2,3}\b",  # vital signs
        r"\b(Parkinson|Crohn|Graves|Hashimoto|Bell|Barrett|Addison|Cushing|Wilson|Huntington|Meniere|Dupuytren|Raynaud|Sjogren|Paget)'s?\b",
        r"\b(Hodgkin|Babinski|Romberg|Foley|Murphy|Glasgow)\b",
        r"\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b",
        r"\b\d{1,2}:\d{2}\b",  # times are not PHI under i2b2 2014
        r"\b\d{1,2}/10\b|\bstrength \d/5\b",  # date-like scores
        r"\bICD-10 [A-Z]\d",
    ],
)
def test_phi_looking_distractors_are_not_labelled(corpus, pattern):
    hits = sum(len(re.findall(pattern, _outside_spans(d))) for d in corpus)
    assert hits >= 10, pattern


# ---------------------------------------------------------------- patients


def test_patient_keeps_name_and_mrn_across_notes(corpus):
    by_patient = defaultdict(list)
    for d in corpus:
        by_patient[d.meta["patient_id"]].append(d)
    multi = [docs for docs in by_patient.values() if len(docs) > 1]
    assert len(multi) >= 30
    with_mrn = [
        docs for docs in multi if sum(any(s.label == "MEDICALRECORD" for s in d.spans) for d in docs) > 1
    ]
    assert len(with_mrn) >= 20
    for docs in by_patient.values():
        mrns = {d.text[s.start : s.end] for d in docs for s in d.spans if s.label == "MEDICALRECORD"}
        assert len(mrns) <= 1, docs[0].meta["patient_id"]  # a letter may omit the MRN
        # The surname in the first note's header is in a PATIENT span of every note.
        first = next(s for s in docs[0].spans if s.label == "PATIENT")
        name = docs[0].text[first.start : first.end]
        surname = name.split(",")[0] if "," in name else name.split()[-1]
        for d in docs:
            names = [d.text[s.start : s.end].lower() for s in d.spans if s.label == "PATIENT"]
            assert any(surname.lower() in n for n in names), d.id


def test_notes_of_a_patient_are_in_order(corpus):
    by_patient = defaultdict(list)
    for d in corpus:
        by_patient[d.meta["patient_id"]].append(d.meta["note_index"])
    for indices in by_patient.values():
        assert indices == list(range(len(indices)))


@pytest.mark.parametrize("seed", range(5))
def test_timeline_is_coherent(seed):
    t = load_templates("en")
    patient = make_patient(0, seed, "en", t.lex)
    kinds = list(KINDS) * 2
    previous_end = None
    for dates in timeline(patient, kinds):
        assert patient.dob < dates["admit"] <= dates["note"] <= dates["reported"]
        assert dates["admit"] <= dates["discharge"] <= dates["transcribed"]
        if previous_end is not None:
            assert previous_end < dates["admit"]
        previous_end = max(dates.values())


@pytest.mark.parametrize("npp", [(1, 1), (2, 2), (3, 5)])
def test_notes_per_patient(npp):
    docs = generate_notes(40, seed=2, notes_per_patient=npp)
    counts = Counter(d.meta["patient_id"] for d in docs)
    last = docs[-1].meta["patient_id"]
    for pid, c in counts.items():
        if pid != last:  # the last patient may be cut short by n
            assert npp[0] <= c <= npp[1]


# ---------------------------------------------------------------- meta and options


def test_meta_and_ids(corpus):
    ids = [d.id for d in corpus]
    assert len(set(ids)) == len(ids)
    for d in corpus:
        assert d.id.startswith("synth-11-")
        assert d.meta["synthetic"] is True
        assert d.meta["generator"] == GENERATOR
        assert d.meta["kind"] in KINDS
        assert re.fullmatch(r"P\d{4,}", d.meta["patient_id"])


@pytest.mark.parametrize("kinds", [["lab_report"], ["referral_letter", "progress_note"]])
def test_kinds_restrict_output(kinds):
    docs = generate_notes(12, seed=1, kinds=kinds)
    assert {d.meta["kind"] for d in docs} <= set(kinds)


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"lang": "fr"}, UnsupportedFormat),
        ({"lang": "es", "kinds": ["discharge_summary"]}, UnsupportedFormat),
        ({"kinds": ["memo"]}, UnsupportedFormat),
        ({"notes_per_patient": (0, 2)}, ValueError),
        ({"notes_per_patient": (3, 2)}, ValueError),
    ],
)
def test_bad_arguments_fail_before_any_note(kwargs, error):
    with pytest.raises(error):
        iter_notes(5, **kwargs)  # raises at the call, not at the first next()


def test_negative_n_is_refused():
    with pytest.raises(ValueError):
        generate_notes(-1)


def test_zero_notes():
    assert generate_notes(0) == []


def test_progress_reaches_one():
    seen = []
    generate_notes(20, seed=1, progress=lambda msg, frac: seen.append(frac))
    assert seen and seen[-1] == 1.0
    assert seen == sorted(seen)


# ---------------------------------------------------------------- templates


def test_shipped_templates_load():
    t = load_templates("en")
    assert set(KINDS) <= set(t.kinds)


@pytest.mark.parametrize(
    "template", ["Seen by {nobody}.", "Date: {date.tomorrow}", "Sexo: {sexo}."]  # SEX: not i2b2 2014
)
def test_unknown_slot_in_templates_fails_at_load(template):
    real = load_templates("en")
    bad = Section("bad", (), "prose", (1, 1), (), (parse(template),), 0.3)
    with pytest.raises(UnsupportedFormat):
        check_templates(Templates("en", real.scheme, real.labels, real.kinds, {"bad": bad}, real.lex))


# ---------------------------------------------------------------- CLI


def test_cli_writes_readable_jsonl(tmp_path: Path, capsys):
    out = tmp_path / "notes.jsonl"
    rc = main(["synth", "--n", "25", "--seed", "1", "--out", str(out), "--no-progress"])
    assert rc == 0
    docs = read_jsonl(out)
    assert _dump(docs) == _dump(generate_notes(25, seed=1))
    assert "wrote 25" in capsys.readouterr().err


def test_cli_kinds_option(tmp_path: Path):
    out = tmp_path / "labs.jsonl"
    rc = main(["synth", "--n", "6", "--kinds", "lab_report", "--out", str(out), "--no-progress"])
    assert rc == 0
    assert {d.meta["kind"] for d in read_jsonl(out)} == {"lab_report"}


@pytest.mark.parametrize(
    "argv,rc",
    [
        (["synth", "--n", "3", "--kinds", "memo"], 1),
        (["synth", "--n", "3", "--lang", "es", "--kinds", "lab_report"], 1),
        (["synth", "--n", "-2"], 2),
        (["synth", "--n", "3", "--notes-per-patient", "4", "2"], 2),
    ],
)
def test_cli_bad_arguments_leave_no_file(tmp_path: Path, argv, rc):
    out = tmp_path / "x.jsonl"
    assert main([*argv, "--out", str(out), "--no-progress"]) == rc
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_cli_rejects_unknown_language(tmp_path: Path):
    with pytest.raises(SystemExit) as exc:
        main(["synth", "--n", "3", "--lang", "fr", "--out", str(tmp_path / "x.jsonl")])
    assert exc.value.code == 2
    assert list(tmp_path.iterdir()) == []


def test_cli_spanish(tmp_path: Path):
    out = tmp_path / "es.jsonl"
    assert main(["synth", "--n", "8", "--lang", "es", "--seed", "3", "--out", str(out), "--no-progress"]) == 0
    docs = read_jsonl(out)
    assert _dump(docs) == _dump(generate_notes(8, seed=3, lang="es"))
    assert all(d.id.startswith("synth-es-3-") for d in docs)


# ---------------------------------------------------------------- Spanish (MEDDOCAN labels)


@pytest.fixture(scope="module")
def corpus_es():
    return generate_notes(200, seed=5, lang="es")


def test_spanish_spans_align_and_do_not_overlap(corpus_es):
    for d in corpus_es:
        assert find_overlap(d.spans) is None, d.id
        assert alignment_upper_bound(tokenize(d.text, "es").tokens, d.spans) == 1.0, d.id
        for s in d.spans:
            value = d.text[s.start : s.end]
            assert value and value == value.strip() and "\n" not in value


def test_spanish_labels_are_meddocan(corpus_es):
    scheme = set(load_scheme("meddocan").names)
    seen = {s.label for d in corpus_es for s in d.spans}
    assert seen <= scheme
    assert len(seen) >= 18
    assert {d.meta["kind"] for d in corpus_es} == set(available_kinds("es"))


@pytest.mark.parametrize(
    "label,pattern",
    [
        ("EDAD_SUJETO_ASISTENCIA", r"^\d{1,3} años$"),  # MEDDOCAN ages include the unit
        ("SEXO_SUJETO_ASISTENCIA", r"^(H|M|[Vv]arón|[Hh]ombre|[Mm]ujer)$"),
        ("FAMILIARES_SUJETO_ASISTENCIA", r"^(madre|padre|hermano|hermana|hija|hijo|esposa|marido|pareja)$"),
        ("ID_TITULACION_PERSONAL_SANITARIO", r"^(\d{2}) \1 \d{5}$"),  # NºCol
        ("TERRITORIO", r"^\d{5}$"),  # CP
        ("FECHAS", r"^\d{2}/\d{2}/\d{4}$"),
        ("FECHAS", r"^\d{1,2} de [a-z]+ de \d{4}$"),
        ("CALLE", r"^(Calle|C/|Avenida|Avda\.|Plaza|Paseo|Camino|Ronda|Travesía) "),
    ],
)
def test_spanish_value_shapes(corpus_es, label, pattern):
    values = [d.text[s.start : s.end] for d in corpus_es for s in d.spans if s.label == label]
    assert any(re.search(pattern, v) for v in values), (label, pattern)


def test_spanish_patient_consistency(corpus_es):
    by_patient = defaultdict(list)
    for d in corpus_es:
        by_patient[d.meta["patient_id"]].append(d)
    for docs in by_patient.values():
        nhc = {d.text[s.start : s.end] for d in docs for s in d.spans if s.label == "ID_SUJETO_ASISTENCIA"}
        assert len(nhc) == 1
        # Some name word (the surnames) is in a patient-name span of every note.
        words = [
            {w.strip(",").lower() for s in d.spans if s.label == "NOMBRE_SUJETO_ASISTENCIA"
             for w in d.text[s.start : s.end].split()}
            for d in docs
        ]
        assert set.intersection(*words), docs[0].meta["patient_id"]


@pytest.mark.parametrize(
    "pattern",
    [
        r"\b\d+(,\d+)? mg\b",
        r"\bTA \d{2,3}/\d{2,3} mmHg\b",
        r"\b(Parkinson|Crohn|Alzheimer|Cushing|Hashimoto|Bell|Dupuytren|Hodgkin|Barrett|Paget|Addison|Wilson|Babinski|Romberg|Murphy|Glasgow)\b",
        r"\b(lunes|martes|miércoles|jueves|viernes|sábado|domingo)\b",
        r"Atención Primaria|Servicio de Urgencias",
    ],
)
def test_spanish_distractors_are_not_labelled(corpus_es, pattern):
    assert sum(len(re.findall(pattern, _outside_spans(d))) for d in corpus_es) >= 10, pattern


def test_spanish_is_deterministic_and_differs_from_english():
    assert _dump(generate_notes(10, seed=1, lang="es")) == _dump(generate_notes(10, seed=1, lang="es"))
    es_ids = {d.id for d in generate_notes(5, seed=1, lang="es")}
    en_ids = {d.id for d in generate_notes(5, seed=1)}
    assert not es_ids & en_ids  # the two languages can share a store
