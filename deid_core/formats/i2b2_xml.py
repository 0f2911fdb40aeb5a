"""i2b2 2014 de-identification XML: ``<deIdi2b2><TEXT><![CDATA[...]]></TEXT><TAGS>...``.

Tags come in two shapes and both are accepted: the 2014 release's
``<NAME id="P0" start=".." end=".." text=".." TYPE="PATIENT"/>`` (element =
category, ``TYPE`` = label; ``TYPE="OTHER"`` under ``LOCATION`` becomes
``LOCATION-OTHER`` as in the project's scheme) and the generic
``<PHI ... TYPE="PATIENT"/>``. Parsing goes through defusedxml so an external
entity or an entity-expansion bomb is refused, not resolved.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import defusedxml
from defusedxml.ElementTree import DefusedXMLParser

from deid_core.corpus import check_layer
from deid_core.errors import CorpusFormatError
from deid_core.formats._common import check_size, decode_utf8
from deid_core.spans import Document, Span, sort_spans

#: i2b2 2014 element name for each label (the scheme's category, spelled as i2b2 does).
I2B2_CATEGORY = {
    "PATIENT": "NAME", "DOCTOR": "NAME", "USERNAME": "NAME",
    "PROFESSION": "PROFESSION",
    "ROOM": "LOCATION", "DEPARTMENT": "LOCATION", "HOSPITAL": "LOCATION",
    "ORGANIZATION": "LOCATION", "STREET": "LOCATION", "CITY": "LOCATION", "STATE": "LOCATION",
    "COUNTRY": "LOCATION", "ZIP": "LOCATION", "LOCATION-OTHER": "LOCATION",
    "AGE": "AGE", "DATE": "DATE",
    "PHONE": "CONTACT", "FAX": "CONTACT", "EMAIL": "CONTACT", "URL": "CONTACT", "IPADDR": "CONTACT",
    "SSN": "ID", "MEDICALRECORD": "ID", "HEALTHPLAN": "ID", "ACCOUNT": "ID", "LICENSE": "ID",
    "VEHICLE": "ID", "DEVICE": "ID", "BIOID": "ID", "IDNUM": "ID",
}


_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding=["']([A-Za-z0-9._-]+)["']""")


class _LineTreeBuilder(ET.TreeBuilder):
    """Remembers the source line of each element so errors can point at it."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[int, int] = {}
        self.expat: Any = None

    def start(self, tag: Any, attrs: Any) -> ET.Element:  # type: ignore[override]
        elem = super().start(tag, attrs)
        if self.expat is not None:
            self.lines[id(elem)] = self.expat.CurrentLineNumber
        return elem


def _parse(data: bytes, path: str) -> tuple[ET.Element, dict[int, int]]:
    builder = _LineTreeBuilder()
    parser = DefusedXMLParser(target=builder, forbid_dtd=False, forbid_entities=True,
                              forbid_external=True)
    builder.expat = getattr(parser, "parser", None)
    try:
        parser.feed(data)
        root = parser.close()
    except defusedxml.DefusedXmlException as exc:
        raise CorpusFormatError(
            f"XML declares entities or external references ({type(exc).__name__});"
            " refused for safety",
            path=path,
        ) from None
    except ET.ParseError as exc:
        line, col = getattr(exc, "position", (None, None))
        raise CorpusFormatError(f"malformed XML (column {col})", path=path, line=line) from None
    return root, builder.lines


def _label(elem: ET.Element) -> str | None:
    typ = elem.get("TYPE") or elem.get("type")
    tag = elem.tag
    if not typ:
        return None if tag == "PHI" else tag
    typ = typ.strip()
    if typ == "OTHER" and tag != "PHI":
        return f"{tag}-OTHER"
    return typ


def read_i2b2_xml(
    path: str | os.PathLike[str], *, doc_id: str | None = None, source: str = "gold",
    allow_overlap: bool = False,
) -> Document:
    p = Path(path)
    where = str(p)
    try:
        check_size(p.stat().st_size, where)
        data = p.read_bytes()
    except OSError as exc:
        raise CorpusFormatError(f"cannot read file: {exc.strerror}", path=where) from exc
    declared = _DECLARED_ENCODING.search(data[:200])
    if declared is None or declared.group(1).lower().replace(b"_", b"-") in (b"utf-8", b"utf8"):
        decode_utf8(data, where)  # a clear "not UTF-8" error beats expat's "invalid token"
    root, lines = _parse(data, where)
    did = doc_id or p.stem
    text_el = root.find("TEXT")
    if text_el is None:
        raise CorpusFormatError("no <TEXT> element", path=where, doc_id=did)
    text = text_el.text or ""
    spans: list[Span] = []
    span_lines: list[int | None] = []
    tags = root.find("TAGS")
    for elem in list(tags) if tags is not None else []:
        line = lines.get(id(elem))
        tag_id = elem.get("id", "?")
        label = _label(elem)
        if label is None:
            raise CorpusFormatError(f"tag {tag_id} has no TYPE", path=where, line=line, doc_id=did)
        try:
            start, end = int(elem.get("start", "")), int(elem.get("end", ""))
        except ValueError:
            raise CorpusFormatError(
                f"tag {tag_id} ({label}) needs integer start and end", path=where, line=line,
                doc_id=did,
            ) from None
        if start < 0 or start >= end or end > len(text):
            raise CorpusFormatError(
                f"tag {tag_id} offsets {start}..{end} ({label}) are out of range for a text of"
                f" length {len(text)}",
                path=where, line=line, doc_id=did, offset=start,
            )
        surface = elem.get("text")
        if surface is not None and text[start:end] != surface:
            raise CorpusFormatError(
                f"tag {tag_id} text does not match <TEXT> at {start}..{end} ({label})",
                path=where, line=line, doc_id=did, offset=start,
            )
        spans.append(Span(start, end, label, source, 1.0))
        span_lines.append(line)
    check_layer(spans, path=where, doc_id=did, span_lines=span_lines, allow_overlap=allow_overlap)
    return Document(did, text, tuple(sort_spans(spans)), {"source_file": p.name})


def _xml_attr(value: str) -> str:
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("\r", "&#13;").replace("\n", "&#10;")
            .replace("\t", "&#9;"))


def _check_xml_chars(doc: Document) -> None:
    for i, ch in enumerate(doc.text):
        o = ord(ch)
        if (o < 0x20 and ch not in "\t\n\r") or 0xD800 <= o <= 0xDFFF or o in (0xFFFE, 0xFFFF):
            raise CorpusFormatError(
                f"character U+{o:04X} cannot be stored in XML 1.0", doc_id=doc.id, offset=i
            )


def write_i2b2_xml(doc: Document) -> str:
    """The note as i2b2 2014 XML; ``read_i2b2_xml`` of the result gives the same spans back.

    The text goes in CDATA as i2b2 does, split around any ``]]>``; a text with
    carriage returns is written as escaped character data instead, because XML
    parsers turn a raw CR LF into LF and every later offset would shift.
    """
    _check_xml_chars(doc)
    if "\r" in doc.text:
        body = _xml_attr(doc.text).replace("&#10;", "\n").replace("&#9;", "\t").replace("&quot;", '"')
    else:
        body = "<![CDATA[" + doc.text.replace("]]>", "]]]]><![CDATA[>") + "]]>"
    out = ['<?xml version="1.0" encoding="UTF-8" ?>\n<deIdi2b2>\n<TEXT>', body, "</TEXT>\n<TAGS>\n"]
    for i, s in enumerate(sort_spans(doc.spans)):
        if s.label.endswith("-OTHER") and s.label.split("-")[0] in ("LOCATION", "NAME", "ID", "CONTACT"):
            tag, typ = s.label[: -len("-OTHER")], "OTHER"
        else:
            tag, typ = I2B2_CATEGORY.get(s.label, "PHI"), s.label
        out.append(
            f'<{tag} id="P{i}" start="{s.start}" end="{s.end}"'
            f' text="{_xml_attr(doc.text[s.start:s.end])}" TYPE="{_xml_attr(typ)}" comment="" />\n'
        )
    out.append("</TAGS>\n</deIdi2b2>\n")
    return "".join(out)
