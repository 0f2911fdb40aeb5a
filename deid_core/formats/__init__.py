"""Readers and writers for the corpus formats people bring: BRAT, i2b2 2014 XML, CSV, plain text.

Every reader returns ``deid_core.spans.Document`` and raises ``CorpusFormatError``
naming the file, line and offset, never quoting note text. JSONL lives in
``deid_core.corpus``.
"""

from __future__ import annotations

from deid_core.formats._common import decode_utf8, safe_file_stem
from deid_core.formats.brat import read_brat, read_brat_dir, write_brat
from deid_core.formats.csv_text import read_csv
from deid_core.formats.i2b2_xml import read_i2b2_xml, write_i2b2_xml
from deid_core.formats.txt import iter_txt, read_txt

__all__ = [
    "decode_utf8",
    "iter_txt",
    "read_brat",
    "read_brat_dir",
    "read_csv",
    "read_i2b2_xml",
    "read_txt",
    "safe_file_stem",
    "write_brat",
    "write_i2b2_xml",
]
