"""Readers and writers for BRAT, i2b2 2014 XML, CSV and plain text, with malformed inputs."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from deid_core.errors import CorpusFormatError
from deid_core.formats import (
    iter_txt,
    read_brat,
    read_brat_dir,
    read_csv,
    read_i2b2_xml,
    write_brat,
    write_i2b2_xml,
)
from deid_core.spans import Document, Span

NOTE = "Pt John Smith, 67 y/o, seen 2067-05-03 at Mercy Hospital.\nCall 555-0101."
SPANS = (
    Span(3, 13, "PATIENT"),
    Span(15, 17, "AGE"),
    Span(28, 38, "DATE"),
    Span(42, 56, "HOSPITAL"),
    Span(63, 71, "PHONE"),
)


def _doc(text: str = NOTE, spans: tuple[Span, ...] = SPANS, doc_id: str = "n1") -> Document:
    return Document(doc_id, text, spans)


# ---------------------------------------------------------------- BRAT


@pytest.mark.parametrize(
    "text,spans",
    [
        (NOTE, SPANS),
        ("\ufeffFecha: 03/05/2019", (Span(8, 18, "FECHAS"),)),  # BOM is character 0
        ("line one\r\nJane\r\nDoe", (Span(10, 19, "PATIENT"),)),  # CRLF kept, span crosses it
        ("no phi here", ()),
    ],
)
def test_brat_round_trip(tmp_path: Path, text: str, spans: tuple[Span, ...]) -> None:
    doc = _doc(text, spans)
    txt, ann = write_brat(doc, tmp_path)
    back = read_brat(txt, ann)
    assert back.text == text
    assert [s.key for s in back.spans] == [s.key for s in doc.spans]


def _brat(tmp_path: Path, ann: str, text: bytes = NOTE.encode()) -> tuple[Path, Path]:
    (tmp_path / "d.txt").write_bytes(text)
    (tmp_path / "d.ann").write_text(ann, encoding="utf-8")
    return tmp_path / "d.txt", tmp_path / "d.ann"


@pytest.mark.parametrize(
    "ann,line,fragment",
    [
        ("T1\tPATIENT 3 13\tJohn Smith\nT2\tDATE 70 99\tx\n", 2, "out of range"),
        ("T1\tPATIENT 13 3\tJohn Smith\n", 1, "out of range"),
        ("T1\tPATIENT 3 13\tJohn Smith\nT2\tPATIENT 3 13\tJohn Smith\n", 2, "duplicate"),
        ("T1\tPATIENT 3 13\tJohn Smith\nT2\tNAME 8 17\tSmith, 67\n", 2, "overlap"),
        ("#1\tnote\nT1\tPATIENT 3 7;8 13\tJohn Smith\n", 2, "discontinuous"),
        ("T1\tPATIENT 3 13\tJane Smith\n", 1, "does not match"),
        ("T1 PATIENT 3 13 John Smith\n", 1, "malformed"),
    ],
)
def test_brat_malformed(tmp_path: Path, ann: str, line: int, fragment: str) -> None:
    txt, annp = _brat(tmp_path, ann)
    with pytest.raises(CorpusFormatError) as err:
        read_brat(txt, annp)
    assert err.value.line == line
    assert err.value.path == str(annp)
    assert fragment in str(err.value)
    assert "John" not in str(err.value) and "Jane" not in str(err.value)


def test_brat_ignores_non_text_bound_lines(tmp_path: Path) -> None:
    txt, ann = _brat(tmp_path, "T1\tPATIENT 3 13\tJohn Smith\nA1\tNegated T1\n#1\tAnnotatorNotes T1\tok\n")
    assert [s.key for s in read_brat(txt, ann).spans] == [(3, 13, "PATIENT")]


def test_brat_non_utf8_text(tmp_path: Path) -> None:
    txt, ann = _brat(tmp_path, "", text=b"first line\nJos\xe9 P\xe9rez\n")
    with pytest.raises(CorpusFormatError, match="UTF-8") as err:
        read_brat(txt, ann)
    assert err.value.line == 2 and err.value.path == str(txt)


def test_brat_dir_pairs_and_missing_ann(tmp_path: Path) -> None:
    write_brat(_doc(doc_id="a"), tmp_path)
    (tmp_path / "b.txt").write_text("nothing", encoding="utf-8")
    docs = list(read_brat_dir(tmp_path))
    assert [d.id for d in docs] == ["a", "b"]
    assert len(docs[0].spans) == len(SPANS) and docs[1].spans == ()


def test_write_brat_id_cannot_escape_directory(tmp_path: Path) -> None:
    txt, ann = write_brat(_doc(doc_id="../../etc/x"), tmp_path / "out")
    assert txt.parent == tmp_path / "out" and ann.parent == tmp_path / "out"


# ---------------------------------------------------------------- i2b2 XML

I2B2 = """<?xml version="1.0" encoding="UTF-8" ?>
<deIdi2b2>
<TEXT><![CDATA[Pt John Smith seen at Mercy Hospital, Boston.]]></TEXT>
<TAGS>
<NAME id="P0" start="3" end="13" text="John Smith" TYPE="PATIENT" comment="" />
<LOCATION id="P1" start="22" end="36" text="Mercy Hospital" TYPE="HOSPITAL" comment="" />
<LOCATION id="P2" start="38" end="44" text="Boston" TYPE="OTHER" comment="" />
</TAGS>
</deIdi2b2>
"""


def test_i2b2_reads_2014_tags(tmp_path: Path) -> None:
    p = tmp_path / "r.xml"
    p.write_text(I2B2, encoding="utf-8")
    doc = read_i2b2_xml(p)
    assert doc.id == "r"
    assert [s.key for s in doc.spans] == [
        (3, 13, "PATIENT"), (22, 36, "HOSPITAL"), (38, 44, "LOCATION-OTHER")
    ]


def test_i2b2_reads_generic_phi_tags(tmp_path: Path) -> None:
    p = tmp_path / "g.xml"
    p.write_text(I2B2.replace("<NAME ", "<PHI ").replace("<LOCATION id=\"P1\"", "<PHI id=\"P1\""),
                 encoding="utf-8")
    assert [s.label for s in read_i2b2_xml(p).spans][:2] == ["PATIENT", "HOSPITAL"]


@pytest.mark.parametrize(
    "text,spans",
    [
        (NOTE, SPANS),
        ("odd ]]> marker, Ann Lee", (Span(16, 23, "PATIENT"),)),
        ("crlf\r\nAnn Lee\r\n<b>&amp;", (Span(6, 13, "PATIENT"),)),
        ("Seen in Boston", (Span(8, 14, "LOCATION-OTHER"),)),
        ("custom label", (Span(0, 6, "Thing"),)),
    ],
)
def test_i2b2_round_trip(tmp_path: Path, text: str, spans: tuple[Span, ...]) -> None:
    p = tmp_path / "x.xml"
    p.write_text(write_i2b2_xml(_doc(text, spans)), encoding="utf-8", newline="")
    back = read_i2b2_xml(p)
    assert back.text == text
    assert [s.key for s in back.spans] == [s.key for s in spans]


XXE = """<?xml version="1.0"?>
<!DOCTYPE deIdi2b2 [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<deIdi2b2><TEXT>&xxe;</TEXT><TAGS/></deIdi2b2>
"""
LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<deIdi2b2><TEXT>&lol3;</TEXT><TAGS/></deIdi2b2>
"""


@pytest.mark.parametrize(
    "content,line,fragment",
    [
        (XXE, None, "refused for safety"),
        (LAUGHS, None, "refused for safety"),
        ("<deIdi2b2><TEXT>unclosed</deIdi2b2>", 1, "malformed XML"),
        ("<deIdi2b2><TAGS/></deIdi2b2>", None, "no <TEXT>"),
        (I2B2.replace('start="22" end="36"', 'start="22" end="99"'), 6, "out of range"),
        (I2B2.replace('start="22" end="36"', 'start="x" end="36"'), 6, "integer"),
        (I2B2.replace('start="38" end="44" text="Boston"', 'start="10" end="30"'), 7, "overlap"),
        (I2B2.replace('text="Mercy Hospital"', 'text="Other Hospital"'), 6, "does not match"),
        (I2B2.replace('start="38" end="44" text="Boston" TYPE="OTHER"',
                      'start="22" end="36" text="Mercy Hospital" TYPE="HOSPITAL"'), 7, "duplicate"),
    ],
)
def test_i2b2_malformed(tmp_path: Path, content: str, line: int | None, fragment: str) -> None:
    p = tmp_path / "bad.xml"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusFormatError) as err:
        read_i2b2_xml(p)
    assert fragment in str(err.value)
    assert err.value.path == str(p)
    if line is not None:
        assert err.value.line == line
    for secret in ("John", "Mercy", "Boston", "root:"):
        assert secret not in str(err.value)


def test_i2b2_non_utf8(tmp_path: Path) -> None:
    p = tmp_path / "latin.xml"
    p.write_bytes(I2B2.replace("John", "Jos\xe9").encode("latin-1"))
    with pytest.raises(CorpusFormatError, match="UTF-8") as err:
        read_i2b2_xml(p)
    assert err.value.line == 3


def test_i2b2_writer_refuses_unstorable_characters() -> None:
    with pytest.raises(CorpusFormatError, match="U\\+0001") as err:
        write_i2b2_xml(_doc("bad \x01 char", ()))
    assert err.value.offset == 4


# ---------------------------------------------------------------- CSV


def _csv(tmp_path: Path, content: str | bytes) -> Path:
    p = tmp_path / "notes.csv"
    if isinstance(content, str):
        p.write_text(content, encoding="utf-8", newline="")
    else:
        p.write_bytes(content)
    return p


def test_csv_columns(tmp_path: Path) -> None:
    p = _csv(tmp_path, 'note_id,mrn,body\nA1,P9,"line one\r\nline, two"\nA2,,second\n')
    docs = list(read_csv(p, text_column="body", id_column="note_id", patient_column="mrn"))
    assert [d.id for d in docs] == ["A1", "A2"]
    assert docs[0].text == "line one\r\nline, two"
    assert docs[0].meta["patient_id"] == "P9" and "patient_id" not in docs[1].meta


def test_csv_default_ids(tmp_path: Path) -> None:
    p = _csv(tmp_path, "\ufefftext\nfirst\nsecond\n")
    assert [d.id for d in read_csv(p)] == ["notes:1", "notes:2"]


@pytest.mark.parametrize(
    "content,kwargs,line,fragment",
    [
        ("id,body\n1,x\n", {"text_column": "text"}, 1, "text column 'text'"),
        ("id,text\n1,x\n", {"id_column": "note_id"}, 1, "id column 'note_id'"),
        ("id,text\n1,x\n", {"patient_column": "mrn"}, 1, "patient column 'mrn'"),
        ("id,text\n1,x\n1,y\n", {"id_column": "id"}, 3, "duplicate document id"),
        ("id,text\n1,x\n2,  \n", {}, 3, "empty text"),
        ("id,text\n1,x,extra\n", {}, 2, "more fields"),
        ("id,text\n1\n", {}, 2, "fewer fields"),
        ("", {}, None, "empty CSV"),
        (b"id,text\n1,ok\n2,Jos\xe9\n", {}, 3, "UTF-8"),
    ],
)
def test_csv_malformed(tmp_path: Path, content: str | bytes, kwargs: dict, line: int | None,
                       fragment: str) -> None:
    p = _csv(tmp_path, content)
    with pytest.raises(CorpusFormatError) as err:
        list(read_csv(p, **kwargs))
    assert fragment in str(err.value)
    assert err.value.path == str(p) and err.value.line == line


# ---------------------------------------------------------------- plain text


def test_txt_folder_and_zip(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha", encoding="utf-8")
    (folder / "sub" / "a.txt").write_text("beta", encoding="utf-8")
    (folder / "skip.csv").write_text("x", encoding="utf-8")
    assert [(d.id, d.text) for d in iter_txt(folder)] == [("a", "alpha"), ("sub/a", "beta")]
    z = tmp_path / "notes.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x/one.txt", "one")
        zf.writestr("two.TXT", "two")
        zf.writestr("readme.md", "ignored")
    assert [(d.id, d.text) for d in iter_txt(z)] == [("two", "two"), ("x/one", "one")]
    assert [d.text for d in iter_txt(folder / "a.txt")] == ["alpha"]


def test_txt_truncated_zip(tmp_path: Path) -> None:
    z = tmp_path / "notes.zip"
    with zipfile.ZipFile(z, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for i in range(5):
            zf.writestr(f"n{i}.txt", "note text " * 200)
    data = z.read_bytes()
    z.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorpusFormatError, match="truncated or corrupt") as err:
        list(iter_txt(z))
    assert err.value.path == str(z)


def test_txt_corrupt_zip_entry(tmp_path: Path) -> None:
    z = tmp_path / "notes.zip"
    with zipfile.ZipFile(z, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("n.txt", "note text " * 500)
    data = bytearray(z.read_bytes())
    data[60:90] = b"\x00" * 30  # damage the compressed stream, keep the directory
    z.write_bytes(bytes(data))
    with pytest.raises(CorpusFormatError, match="truncated or corrupt"):
        list(iter_txt(z))


@pytest.mark.parametrize("where", ["file", "zip"])
def test_txt_non_utf8(tmp_path: Path, where: str) -> None:
    raw = b"ok\nJos\xe9\n"
    if where == "file":
        p = tmp_path / "n.txt"
        p.write_bytes(raw)
    else:
        p = tmp_path / "n.zip"
        with zipfile.ZipFile(p, "w") as zf:
            zf.writestr("n.txt", raw)
    with pytest.raises(CorpusFormatError, match="UTF-8") as err:
        list(iter_txt(p))
    assert err.value.line == 2


def test_txt_missing_path(tmp_path: Path) -> None:
    with pytest.raises(CorpusFormatError, match="no such file"):
        list(iter_txt(tmp_path / "nope"))
