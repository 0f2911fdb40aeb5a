"""English rules: one (text, expected spans) table per rule family, Presidio style.

Each table row lists every span of the family's labels that the built-in rule
set must return for the text, after the merge keeps the best of overlapping
rule matches. Negative rows expect nothing.
"""

from __future__ import annotations

import re

import pytest

from deid_core.engine.merge import merge_spans
from deid_core.engine.rules import Rule, RuleSet, load_rules
from deid_core.errors import RuleError, UnsupportedFormat
from deid_core.spans import Span


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return load_rules("en")


def found(rules: RuleSet, text: str, labels: set[str]) -> list[tuple[str, str]]:
    """Merged rule output restricted to ``labels``, as (text, label) for readable failures."""
    spans = merge_spans(rules.find(text))
    return [(text[s.start : s.end], s.label) for s in spans if s.label in labels]


def at(text: str, piece: str, label: str) -> tuple[str, str]:
    assert piece in text, piece
    return (piece, label)


PHONE_FAX = [
    ("Call (871) 720-9439 today", [("(871) 720-9439", "PHONE")]),
    ("Home 171-289-0968.", [("171-289-0968", "PHONE")]),
    ("cell 617.555.1234 or +1 617-555-1234", [("617.555.1234", "PHONE"), ("+1 617-555-1234", "PHONE")]),
    ("Phone: 659-5187", [("659-5187", "PHONE")]),
    ("pager 555 123 4567", [("555 123 4567", "PHONE")]),
    ("office 171-289-0968 x123", [("171-289-0968 x123", "PHONE")]),
    ("Reach her at +44 20 7946 0958.", [("+44 20 7946 0958", "PHONE")]),
    ("Phone: 0378 3549890", [("0378 3549890", "PHONE")]),
    ("call me at 0494 92 82 32 today", [("0494 92 82 32", "PHONE")]),
    ("Mobile: 723 813 266", [("723 813 266", "PHONE")]),
    ("Fax: 648-875-5821", [("648-875-5821", "FAX")]),
    ("fax # (617) 555-0199", [("(617) 555-0199", "FAX")]),
    ("and faxed to +1 859 541 6336.", [("+1 859 541 6336", "FAX")]),
    ("fax: +41 (0)71 526 99 04", [("+41 (0)71 526 99 04", "FAX")]),
    ("Fax: 387-324-6559 x7624 | www", [("387-324-6559 x7624", "FAX")]),
    ("Pager #70925", [("70925", "PHONE")]),
    ("Please page 7-8269 with questions", [("7-8269", "PHONE")]),
    # negatives: a bare seven-digit number, a range, an account-like run of digits
    ("Hemoglobin 659-5187 is not a phone", []),
    ("ranges 100-200-300", []),
    ("id 1712890968", []),
]


@pytest.mark.parametrize(("text", "expected"), PHONE_FAX)
def test_phone_and_fax(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"PHONE", "FAX"}) == expected


MEDICAL_RECORD = [
    ("record 453-39-84-4 on file", [("453-39-84-4", "MEDICALRECORD")]),
    ("MR 544-84-52", [("544-84-52", "MEDICALRECORD")]),
    ("MRN: 0123456", [("0123456", "MEDICALRECORD")]),
    ("Medical record number 12-345678", [("12-345678", "MEDICALRECORD")]),
    ("MRN #A1234567", [("A1234567", "MEDICALRECORD")]),
    ("Med Rec #: 1535339", [("1535339", "MEDICALRECORD")]),
    ("Patient ID: 00051222", [("00051222", "MEDICALRECORD")]),
    ("Record No. 1283402", [("1283402", "MEDICALRECORD")]),
    # negatives: an SSN shape and a phone shape are not record numbers
    ("SSN 123-45-6789", []),
    ("MRN: pending", []),
    ("dose 453-39", []),
]


@pytest.mark.parametrize(("text", "expected"), MEDICAL_RECORD)
def test_medical_record(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"MEDICALRECORD"}) == expected


EMAIL_IP_URL = [
    ("mail gmichael@kcm.org now", [("gmichael@kcm.org", "EMAIL")]),
    ("j.doe+clinic@mail.example.co.uk.", [("j.doe+clinic@mail.example.co.uk", "EMAIL")]),
    ("host 198.168.2.78 down", [("198.168.2.78", "IPADDR")]),
    ("v6 2001:0db8:85a3:0000:0000:8a2e:0370:7334", [("2001:0db8:85a3:0000:0000:8a2e:0370:7334", "IPADDR")]),
    ("see https://www.example.com/a?b=1.", [("https://www.example.com/a?b=1", "URL")]),
    ("portal www.mychart.org/login today", [("www.mychart.org/login", "URL")]),
    ("site kcm.org for info", [("kcm.org", "URL")]),
    # negatives: invalid octets, a version string, an at-sign without a domain
    ("bad 999.168.2.78", []),
    ("version 1.2.3.4.5", []),
    ("leading zero 01.02.03.04", []),
    ("5 mg @ night", []),
]


@pytest.mark.parametrize(("text", "expected"), EMAIL_IP_URL)
def test_email_ip_url(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"EMAIL", "IPADDR", "URL"}) == expected


SSN_ZIP = [
    ("SSN 123-45-6789", [("123-45-6789", "SSN")]),
    ("Social Security #: 123456789", [("123456789", "SSN")]),
    ("Boston, MA 02114", [("02114", "ZIP")]),
    ("Springfield, Illinois 62704-1234", [("62704-1234", "ZIP")]),
    ("ZIP: 02115", [("02115", "ZIP")]),
    ("My zip code is 2371", [("2371", "ZIP")]),
    ("ZIP: 394 13", [("394 13", "ZIP")]),
    ("ZIP: 7412 SL", [("7412 SL", "ZIP")]),
    # validator negatives: area 000, 666 and 9xx, group 00
    ("SSN 000-12-3456", []),
    ("SSN 666-12-3456", []),
    ("SSN 912-12-3456", []),
    ("SSN 123-00-3456", []),
    # a five-digit number without a state or cue is not a ZIP
    ("WBC 12345 cells", []),
    ("cc: Becky J. Kirk, MD, 31834 Yang Glens", []),
    ("Becky Kirk MD 31834 Yang Glens", []),
]


@pytest.mark.parametrize(("text", "expected"), SSN_ZIP)
def test_ssn_and_zip(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"SSN", "ZIP"}) == expected


DATES = [
    ("on 09/14/2067 at", [("09/14/2067", "DATE")]),
    ("on 9/14/67.", [("9/14/67", "DATE")]),
    ("on 9-14-2067", [("9-14-2067", "DATE")]),
    ("on 2067-09-14", [("2067-09-14", "DATE")]),
    ("Seen Sept 14, 2067.", [("Sept 14, 2067", "DATE")]),
    ("Seen September 14th 2067", [("September 14th 2067", "DATE")]),
    ("Seen 14 September 2067", [("14 September 2067", "DATE")]),
    ("Seen 14-Sep-2067", [("14-Sep-2067", "DATE")]),
    ("since September 2067", [("September 2067", "DATE")]),
    ("seen on 9/14 for follow up", [("9/14", "DATE")]),
    ("cultures drawn on 5/3 grew MRSA", [("5/3", "DATE")]),
    ("seen Sept 14 and", [("Sept 14", "DATE")]),
    ("seen 14th of September and", [("14th of September", "DATE")]),
    ("Monday, September 14, 2067 visit", [("September 14, 2067", "DATE")]),
    ("seen on Friday, 9/19 by Dr. Buck", [("9/19", "DATE")]),
    ("Hospitalized 12/14/2009-12/19/2009.", [("12/14/2009", "DATE"), ("12/19/2009", "DATE")]),
    ("Hospitalized 4/9-4/12", [("4/9", "DATE"), ("4/12", "DATE")]),
    ("CXR in April: mild", [("April", "DATE")]),
    ("thoracentesis (1999)", [("1999", "DATE")]),
    ("contrast (anaphylaxis 2006).", [("2006", "DATE")]),
    ("DOB: 14-Dec-1958", [("14-Dec-1958", "DATE")]),
    ("diagnosed in 2067 with", [("2067", "DATE")]),
    # validator negatives: impossible day, month 13, a blood pressure, doses and scores
    ("on 02/31/2067", []),
    ("on 13/14/2067", []),
    ("BP 120/80", []),
    ("pain 5/10 today", []),
    ("take 1/2 tab", []),
    ("Neuro: strength 5/5 in the left", []),
    ("Pain is 9/10, sharp", []),
    ("down from 7/10 yesterday", []),
    ("you may go", []),
    ("admitted 2067 patients", []),
    ("May be discharged", []),
]


@pytest.mark.parametrize(("text", "expected"), DATES)
def test_dates(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"DATE"}) == expected


def found_by(rules: RuleSet, text: str, names: set[str]) -> list[tuple[str, str]]:
    """Matches of the named rules only, merged: one rule family in isolation."""
    subset = RuleSet([r for r in rules.rules if r.name in names], window=rules.window)
    return [(text[s.start : s.end], s.label) for s in merge_spans(subset.find(text))]


HIPAA_AGE_RULES = {"age_year_old", "age_cue", "age_decade"}

AGES_OVER_89 = [
    ("A 92 year old man", [("92", "AGE")]),
    ("a 94-year-old woman", [("94", "AGE")]),
    ("94yo F", [("94", "AGE")]),
    ("92 y/o M", [("92", "AGE")]),
    ("91 years of age", [("91", "AGE")]),
    # notes written in capitals
    ("ED TRIAGE\n92 YO M BIBA FROM SNF", [("92", "AGE")]),
    ("94 YEAR OLD WOMAN", [("94", "AGE")]),
    ("A 91 Y/O MAN", [("91", "AGE")]),
    ("92 YOGA CLASSES", []),
    ("aged 91, lives alone", [("91", "AGE")]),
    ("age: 103", [("103", "AGE")]),
    ("in her 90s", [("90s", "AGE")]),
    # validator negatives: ages up to 89 are not HIPAA-special
    ("A 45 year old man", []),
    ("89 yo", []),
    ("aged 45", []),
    ("in her 50s", []),
    ("a 92 mg dose", []),
]


@pytest.mark.parametrize(("text", "expected"), AGES_OVER_89)
def test_ages_over_89(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found_by(rules, text, HIPAA_AGE_RULES) == expected


AGES_ANY = [
    ("A 45 year old man", [("45", "AGE")]),
    ("a 35-year-old woman", [("35", "AGE")]),
    ("i'm 26 y/o.", [("26", "AGE")]),
    ("retired at the age of 72", [("72", "AGE")]),
    ("He just turned 50 years old", [("50", "AGE")]),
    ("Crohn's disease, died at 57.", [("57", "AGE")]),
    ("in his 50s", [("50s", "AGE")]),
    ("in her early sixties", [("sixties", "AGE")]),
    ("A 92 year old man", [("92", "AGE")]),
    ("Denise is a twenty-eight-year-old woman", [("twenty-eight", "AGE")]),
    ("Age/Sex: 43/M", [("43", "AGE")]),
    ("1. 38F with CHF", [("38", "AGE")]),
    # negatives: not an age
    ("Temp 98 F", []),
    ("seen by F. Smith", []),
    ("turned 90 degrees", []),
    ("a 5 mg dose", []),
    ("age 200", []),
    ("in the 1990s", []),
    ("popular in the 80s", []),
]


@pytest.mark.parametrize(("text", "expected"), AGES_ANY)
def test_ages_any(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"AGE"}) == expected


HONORIFICS = [
    ("Hello, this is Mr. Dustin Wirth.", [("Mr.", "TITLE")]),
    ("For my take on Mrs Baker, see", [("Mrs", "TITLE")]),
    ("seen by Dr.Smith today", [("Dr.", "TITLE")]),
    ("Miss Jane and Prof. Ode", [("Miss", "TITLE"), ("Prof.", "TITLE")]),
    # negatives: no capitalised name after it, or part of a word
    ("Dr. smith", []),
    ("the dr said", []),
    ("Mr.", []),
    ("Misses Paul", []),
    ("DrSmith", []),
]


@pytest.mark.parametrize(("text", "expected"), HONORIFICS)
def test_honorifics(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"TITLE"}) == expected


def test_cue_rules_are_left_out_of_standalone_tagging(rules: RuleSet) -> None:
    text = "Mr. Dustin Wirth, phone 617-555-0199"
    every = {s.source for s in rules.find(text)}
    alone = {s.source for s in rules.find(text, standalone_only=True)}
    assert "rule:honorific" in every and "rule:honorific" not in alone
    assert alone == every - {"rule:honorific"}


def test_find_reports_source_and_score(rules: RuleSet) -> None:
    text = "Fax: 648-875-5821, phone 617-555-0199"
    spans = rules.find(text)
    # The plain phone rules step aside right after a fax cue, so the fax number is
    # found once, as FAX; the other number is a PHONE from the Table 2 rule.
    assert [(s.label, s.source) for s in spans] == [("FAX", "rule:fax"), ("PHONE", "rule:phone_dashed")]
    assert all(0 < s.score <= 1 for s in spans)
    assert merge_spans(spans) == spans


def test_identical_spans_keep_highest_score() -> None:
    low = Rule("low", "ID", r"\d+", 0.5)
    high = Rule("high", "ID", r"\d{3}", 0.9)
    spans = RuleSet([low, high]).find("abc 123 def")
    assert spans == [Span(4, 7, "ID", "rule:high", 0.9)]


def test_group_selects_phi_without_context() -> None:
    rule = Rule("cue", "ID", r"ID:\s*(\d+)", 0.8, group=1)
    assert list(rule.find("ID: 42")) == [Span(4, 6, "ID", "rule:cue", 0.8)]
    named = Rule("named", "ID", r"ID:\s*(?P<v>\d+)", 0.8, group="v")
    assert [s.start for s in named.find("ID: 42")] == [4]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pattern": "(unclosed"}, "does not compile"),
        ({"pattern": r"\d+", "validator": "no_such_check"}, "unknown validator"),
        ({"pattern": r"(\d+)", "group": 2}, "group 2 does not exist"),
        ({"pattern": r"(\d+)", "group": "nope"}, "does not exist"),
        ({"pattern": r"\d*"}, "matches the empty string"),
        ({"pattern": r"\d+", "score": 1.5}, "score must be within"),
        ({"pattern": r"\d+", "label": ""}, "non-empty label"),
        ({"pattern": r"\d+", "standalone": "no"}, "'standalone' must be true or false"),
    ],
)
def test_bad_rule_fails_at_construction_and_names_itself(kwargs: dict, message: str) -> None:
    args = {"name": "my_rule", "label": "ID", "score": 0.9} | kwargs
    with pytest.raises(RuleError, match=message) as info:
        Rule(**args)
    assert "my_rule" in str(info.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("rules: [{name: a, label: ID, pattern: '(x'}]", "does not compile"),
        ("rules: [{name: a, label: ID, pattern: 'x', validator: nope}]", "unknown validator"),
        ("rules: [{name: a, label: ID, pattern: '{{MISSING}}'}]", "unknown fragment"),
        ("rules: [{name: a, label: ID, pattern: 'x', colour: red}]", "unknown keys"),
        ("rules: [{name: a, label: ID, pattern: 'x', flags: [NOPE]}]", "unknown regex flag"),
        ("rules: [{name: a, label: ID, pattern: 'x'}, {name: a, label: ID, pattern: 'y'}]", "share"),
        ("rules: [{name: a, label: ID}]", "needs a 'pattern'"),
        ("nothing: here", "needs a 'rules' list"),
        ("rules: [unclosed", "not valid YAML at line"),
    ],
)
def test_bad_rule_file_names_file_and_rule(tmp_path, body: str, message: str) -> None:
    path = tmp_path / "site_rules.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(RuleError, match=message) as info:
        load_rules("en", path)
    assert "site_rules.yaml" in str(info.value)


def test_user_rule_file_with_fragments_and_flags(tmp_path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(
        "fragments:\n  PFX: 'ACC'\n"
        "rules:\n"
        "  - {name: account, label: ACCOUNT, pattern: '\\b{{PFX}}-(\\d{6})\\b', group: 1,"
        " flags: [IGNORECASE], score: 0.8}\n",
        encoding="utf-8",
    )
    rules = load_rules("en", path)
    assert rules.labels == ["ACCOUNT"]
    assert rules.find("acc-123456 and ACC-654321") == [
        Span(4, 10, "ACCOUNT", "rule:account", 0.8),
        Span(19, 25, "ACCOUNT", "rule:account", 0.8),
    ]
    assert rules.get("account").pattern.flags & re.IGNORECASE


def test_unknown_language_is_a_typed_error() -> None:
    with pytest.raises(UnsupportedFormat, match="xx"):
        load_rules("xx")


def test_builtin_rules_cover_the_issue_labels(rules: RuleSet) -> None:
    standalone = {rule.label for rule in rules if rule.standalone}
    assert standalone == {
        "PHONE", "FAX", "MEDICALRECORD", "EMAIL", "IPADDR", "URL", "SSN", "ZIP", "DATE", "AGE",
        # issue 12: names, facilities and places from context cues and the lexicons
        "DOCTOR", "PATIENT", "HOSPITAL", "CITY", "STATE", "STREET",
        # issue 12, challenge set 2: employers and agencies ("worked at ...", "through ...")
        "ORGANIZATION",
        # issue 13, round 11: account numbers apart from other identifiers (their own label in i2b2 2014)
        "ACCOUNT",
        # issue 13, round 8: health-plan and other identifiers after their cue
        "HEALTHPLAN", "IDNUM",
    }
    assert set(rules.labels) == standalone | {"TITLE"}  # the honorific cue


def test_error_messages_never_quote_note_text(rules: RuleSet) -> None:
    # The rule set runs over text but only reports offsets; spans carry no text at all.
    text = "Patient John Secret, MRN: 0123456"
    for span in rules.find(text):
        assert "John" not in repr(span)


def _all_table_texts() -> list[str]:
    tables = [PHONE_FAX, MEDICAL_RECORD, EMAIL_IP_URL, SSN_ZIP, DATES, AGES_OVER_89, AGES_ANY]
    return [text for table in tables for text, _ in table]


@pytest.mark.parametrize("window", [(48, 40), (200, 120)])
def test_anchor_windows_find_what_a_full_scan_finds(rules: RuleSet, window: tuple[int, int]) -> None:
    """Windows are an optimisation only: same spans as scanning the whole note per rule."""
    texts = _all_table_texts()
    note = "\n".join(texts)  # one long note, so that windows merge and split
    narrowed = RuleSet(rules.rules, window=window)
    for text in [*texts, note]:
        assert narrowed.find(text) == rules.find(text, use_anchors=False)


def test_window_must_cover_the_cue(rules: RuleSet) -> None:
    # With no room before the digits, "MRN:" falls outside the window: the window
    # size is a contract of the rule file (cues within 48 characters of the anchor).
    text = "MRN: A1234567"
    assert RuleSet(rules.rules, window=(0, 0)).find(text) == []
    assert [s.label for s in rules.find(text)] == ["MEDICALRECORD"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"anchor": "(x"}, "anchor does not compile"),
        ({"anchor": "x*"}, "anchor matches the empty string"),
    ],
)
def test_bad_anchor(kwargs: dict, message: str) -> None:
    with pytest.raises(RuleError, match=message):
        Rule("r", "ID", r"\d+", 0.9, **kwargs)


def test_anchor_windows_widen_to_whitespace() -> None:
    from deid_core.engine.rules import anchor_windows

    text = "alpha beta 12 gamma delta"
    assert anchor_windows(text, re.compile(r"\d"), 2, 2) == [(6, 19)]
    assert anchor_windows("no digits", re.compile(r"\d"), 5, 5) == []


@pytest.mark.parametrize(
    "text",
    [
        "FAX: 617-555-0199",
        "Fax: 617-555-0199",
        "fAx 617-555-0199",
        "İstanbul clinic fax 617-555-0199",  # lower() lengthens İ: the regex fallback finds the cue
    ],
)
def test_literal_anchor_is_case_insensitive(text: str) -> None:
    rule = Rule("fax", "FAX", r"(?i:\bfax\b\s*:?\s*)(\d{3}-\d{3}-\d{4})", 0.9, group=1, anchor=("fax",))
    rules = RuleSet([rule])
    assert [s.label for s in rules.find(text)] == ["FAX"]
    assert rules.find(text) == rules.find(text, use_anchors=False)


@pytest.mark.parametrize("anchor", [(), ("",), ("ok", 3)])
def test_bad_literal_anchor(anchor: tuple) -> None:
    with pytest.raises(RuleError, match="anchor list"):
        Rule("r", "ID", r"\d+", 0.9, anchor=anchor)


@pytest.mark.parametrize("window", [[5], [-1, 3], ["a", 2]])
def test_bad_rule_window(tmp_path, window: list) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        f"rules: [{{name: a, label: ID, pattern: '\\d+', anchor: '\\d', window: {window!r}}}]",
        encoding="utf-8",
    )
    with pytest.raises(RuleError, match="window"):
        load_rules("en", path)


def test_rule_window_overrides_rule_set_window() -> None:
    cue = Rule("cue", "ID", r"ID:\s*(\d+)", 0.8, group=1, anchor=r"\d", window=(8, 2))
    far = Rule("far", "ID", r"Record number\s*(\d+)", 0.8, group=1, anchor=r"\d", window=(2, 2))
    rules = RuleSet([cue, far], window=(0, 0))
    assert [s.source for s in rules.find("ID: 42")] == ["rule:cue"]
    # "far" needs 14 characters of cue but its window gives it 2: the window is the rule's contract.
    assert rules.find("Record number 7") == []
    assert [s.source for s in rules.find("Record number 7", use_anchors=False)] == ["rule:far"]


def test_cli_rules_check_apply_score(tmp_path, capsys) -> None:
    """``deid-workbench rules``: the three actions on a small generated corpus."""
    import json

    from deid_core.cli import main
    from deid_core.corpus import read_jsonl, write_jsonl
    from deid_core.synthetic import generate_notes

    corpus = tmp_path / "gold.jsonl"
    write_jsonl(corpus, generate_notes(6, seed=1))

    assert main(["rules", "check", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rules"]["count"] == len(load_rules("en"))
    assert "ages_under_90" in summary["filters"]["disabled"]

    out = tmp_path / "marked.jsonl"
    assert main(["rules", "apply", "--input", str(corpus), "--output", str(out), "--no-progress"]) == 0
    marked = read_jsonl(out)
    assert [d.id for d in marked] == [d.id for d in read_jsonl(corpus)]
    assert all(s.source.startswith("rule:") for d in marked for s in d.spans)
    assert any(d.spans for d in marked)

    assert main(["rules", "score", "--gold", str(corpus), "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["documents"] == 6
    assert report["rules"]["email"]["gold_label"] == "EMAIL"

    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [{name: a, label: X, pattern: '(x'}]", encoding="utf-8")
    assert main(["rules", "check", "--rules", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "rule 'a'" in err


def test_rule_report_counts(rules: RuleSet) -> None:
    from deid_core.engine.rules import rule_report
    from deid_core.spans import Document

    text = "Fax: 648-875-5821 and SSN 123-45-6789"
    gold = [Document("d1", text, (Span(5, 17, "FAX"),))]
    report = rule_report(gold, rules)
    assert report["fax"] == {
        "label": "FAX", "gold_label": "FAX", "matches": 1,
        "precision": 1.0, "recall": 1.0, "overlap_precision": 1.0,
    }
    assert report["ssn"]["matches"] == 1 and report["ssn"]["precision"] == 0.0
    assert report["ssn"]["recall"] is None and report["ssn"]["overlap_precision"] == 0.0
    mapped = rule_report(gold, rules, label_map={"FAX": "PHONE_NUMBER"})
    assert mapped["fax"]["precision"] == 0.0


@pytest.mark.parametrize("lang", ["en", "es"])
def test_one_pass_literal_anchors_hit_what_each_word_scan_hits(lang: str) -> None:
    # RuleSet.find finds every literal anchor in one Aho-Corasick pass; the hits
    # must be those of a str.find scan per cue word, edges and overlaps included.
    import random

    from deid_core.engine.rules import _anchor_hits, _LiteralAnchors
    from deid_core.synthetic import REALISTIC, generate_notes

    rules = load_rules(lang)
    anchors = [a for a in dict.fromkeys(r.anchor for r in rules) if isinstance(a, tuple)]
    assert anchors
    one_pass = _LiteralAnchors(anchors)
    cues = sorted({core for a in anchors for core in a})
    rng = random.Random(11)
    texts = [d.text for d in generate_notes(20, seed=5, lang=lang, **(REALISTIC if lang == "en" else {}))]
    # Cue words glued to letters, digits and punctuation, so that edge checks decide.
    texts += [
        "".join(rng.choice([rng.choice(cues).replace("\\b", ""), " ", "x", "7", ".", "-", "\n", "é"])
                for _ in range(rng.randint(1, 40)))
        for _ in range(300)
    ]
    hits_found = 0
    for text in texts:
        lowered = text.lower()
        expected = [_anchor_hits(text, lowered, a) for a in anchors]
        assert one_pass.hits(lowered) == expected
        hits_found += sum(map(len, expected))
    assert hits_found > 1000


def test_libyaml_reads_every_shipped_yaml_file_as_the_python_loader_does() -> None:
    # Rule, filter, lexicon and propagation files are read with libyaml's loader
    # when PyYAML has it (rules.SAFE_LOADER); it must see the same documents.
    from pathlib import Path

    import yaml

    from deid_core.engine.rules import SAFE_LOADER

    files = sorted((Path(__file__).resolve().parents[1] / "deid_core" / "data").rglob("*.yaml"))
    assert len(files) > 10
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert repr(yaml.load(text, Loader=SAFE_LOADER)) == repr(yaml.safe_load(text)), path.name
