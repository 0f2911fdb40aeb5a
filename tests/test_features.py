from __future__ import annotations

import pytest

from deid_core.engine.features import (
    BOS,
    EOS,
    FeatureConfig,
    FeatureExtractor,
    short_shape,
    word_shape,
)
from deid_core.engine.gazetteers import Gazetteer, build_gazetteer, load_word_list, merge_gazetteers
from deid_core.engine.tokenize import tokenize
from deid_core.errors import CorpusFormatError, ModelError
from deid_core.spans import Span


@pytest.mark.parametrize(
    ("word", "long", "short"),
    [
        ("PO/5mg", "AA-#aa", "A-#a"),
        ("Smith", "Aaaaa", "Aa"),
        ("09/14/2067", "##-##-####", "#-#-#"),
        ("NHC", "AAA", "A"),
        ("Cuéllar", "Aaaaaaa", "Aa"),
        ("ñ", "a", "a"),
        ("-", "-", "-"),
    ],
)
def test_word_shapes(word: str, long: str, short: str) -> None:
    assert word_shape(word) == long
    assert short_shape(word) == short


def _token_feats(text: str, word: str, lang: str = "en", **kw: object) -> list[str]:
    tok = tokenize(text, lang)
    fx = FeatureExtractor(FeatureConfig(**kw), lang=lang)  # type: ignore[arg-type]
    flat = [f for sent in fx.sentence_features(tok) for f in sent]
    idx = [t.text for t in tok.tokens].index(word)
    return flat[idx]


@pytest.mark.parametrize(
    ("text", "word", "present", "absent"),
    [
        # affixes 1..5, bounded by the word length
        ("see Gonzalez today", "Gonzalez", ["0:p1=g", "0:p5=gonza", "0:s5=zalez", "0:s1=z"], ["0:p6=gonzal"]),
        ("Dr Li came", "Li", ["0:p2=li", "0:s2=li", "0:title"], ["0:p3=li"]),
        # orthographic flags
        ("Code 12345678 ok", "12345678", ["0:ndig=8", "0:len=7-9"], ["0:hasdigit"]),
        ("Sexo: H.", "H", ["0:init"], ["0:upper"]),
        ("the NHS said", "NHS", ["0:upper", "0:sh=AAA"], ["0:title"]),
        # window words and sentence padding
        ("Juan came home", "Juan", ["-1:BOS", "-2:BOS", "1:w=came", "2:w=home", "1:ss=a"], []),
        ("Juan came home", "home", ["1:EOS", "-2:w=juan", "-2:title"], ["1:w=home"]),
        # bigrams
        ("Juan came home", "came", ["b-=juan|came", "b+=came|home"], []),
        # sentence information
        ("He came (with Ana) today.", "Ana", ["inbracket", "send=."], []),
        ("He came (with Ana) today.", "today", ["send=."], ["inbracket"]),
    ],
)
def test_token_feature_table(text: str, word: str, present: list[str], absent: list[str]) -> None:
    feats = _token_feats(text, word)
    for f in present:
        assert f in feats, f
    for f in absent:
        assert f not in feats, f


@pytest.mark.parametrize(
    ("text", "word", "present", "absent"),
    [
        ("Nombre:  Ernesto.\n", "Ernesto", ["kv=nombre", "kvp=1", "kv1=nombre"], ["inkey"]),
        ("Fecha de nacimiento: 03/03/1946.\n", "03", ["kv=fecha_de_nacimiento", "kvp=1"], []),
        ("Fecha de nacimiento: 03/03/1946.\n", "nacimiento", ["inkey"], ["kvp=1"]),
        # a second key on the same line starts at its capitalised word
        ("Edad: 70 años Sexo: H.\n", "H", ["kv=sexo", "kvp=1"], ["kv=años_sexo"]),
        ("Edad: 70 años Sexo: H.\n", "años", ["kv=edad", "kvp=2"], []),
        # line position
        ("Edad: 70 años Sexo: H.\n", "Edad", ["lpos=0"], ["llast"]),
        ("Edad: 70 años Sexo: H.\n", ".", ["llast", "lpos=4"], []),
    ],
)
def test_header_value_structure(text: str, word: str, present: list[str], absent: list[str]) -> None:
    feats = _token_feats(text, word, lang="es")
    for f in present:
        assert f in feats, f
    for f in absent:
        assert f not in feats, f


@pytest.mark.parametrize(
    ("text", "word", "section", "is_header"),
    [
        ("Datos del paciente.\nNombre: Ana.", "Ana", "sec=datos_del_paciente", False),
        ("Datos del paciente.\nNombre: Ana.", "paciente", None, True),
        ("DISCHARGE SUMMARY\nSeen by Ana.", "Ana", "sec=discharge_summary", False),
        ("Medications:\nAspirin daily.", "Aspirin", "sec=medications", False),
        ("No header here. Ana came.", "Ana", None, False),
    ],
)
def test_section_headers(text: str, word: str, section: str | None, is_header: bool) -> None:
    feats = _token_feats(text, word, lang="es" if "Datos" in text else "en")
    sections = [f for f in feats if f.startswith("sec=")]
    assert sections == ([section] if section else [])
    assert ("hdr" in feats) is is_header


def test_attributes_are_unique_and_configurable() -> None:
    tok = tokenize("Nombre: Juan Pérez.\nTel: 91 555 12 12. Juan vino.", "es")
    gaz = Gazetteer({"NOMBRE": {("juan",)}})
    rules = [Span(24, 36, "TELEFONO", "rule:phone")]
    fx = FeatureExtractor(lang="es", gazetteer=gaz)
    for sent in fx.sentence_features(tok, rules):
        for feats in sent:
            assert len(feats) == len(set(feats))
    flat = [f for sent in fx.sentence_features(tok, rules) for f in sent]
    words = [t.text for t in tok.tokens]
    assert "gaz=S-NOMBRE" in flat[words.index("Juan")]
    assert "rule=B-TELEFONO" in flat[words.index("91")]
    assert "rule=I-TELEFONO" in flat[words.index("555")]
    bare = FeatureExtractor(
        FeatureConfig(window=1, gazetteer=False, rules=False, bigrams=False), lang="es", gazetteer=gaz
    )
    flat2 = [f for sent in bare.sentence_features(tok, rules) for f in sent]
    joined = {f for feats in flat2 for f in feats}
    assert not any(f.startswith(("gaz=", "rule=", "b-=", "2:", "-2:")) for f in joined)


def test_attributes_are_printable_single_line() -> None:
    tok = tokenize("Ana\x07x vino", "es")
    fx = FeatureExtractor(lang="es")
    for sent in fx.sentence_features(tok):
        for feats in sent:
            assert all(f.isprintable() for f in feats)


@pytest.mark.parametrize("word", ["Smith", "09/14/2067", "NHC", "a", "ñandú", "--", BOS, EOS])
def test_word_type_features_equal_each_offsets_features(word: str) -> None:
    # Tagging scores a new word at every offset in one call; training asks per offset.
    fx = FeatureExtractor(FeatureConfig(window=3))
    assert fx.word_type_features(word) == [fx.compute_type_features(o, word) for o in fx.offsets]


def test_feature_config_round_trip() -> None:
    cfg = FeatureConfig(window=1, affix_max=3, gazetteer=False)
    assert FeatureConfig.from_dict(cfg.to_dict()) == cfg


def test_gazetteer_marks_longest_match_bioes() -> None:
    gaz = Gazetteer({"CIUDAD": {("santa", "cruz", "de", "tenerife"), ("santa", "cruz")}, "NOMBRE": {("cruz",)}})
    words = ["en", "Santa", "Cruz", "de", "Tenerife", "y", "Cruz"]
    marks = gaz.marks(words)
    assert marks[1] == ["B-CIUDAD"]
    assert marks[2] == ["I-CIUDAD", "S-NOMBRE"]
    assert marks[4] == ["E-CIUDAD"]
    assert marks[6] == ["S-NOMBRE"]
    assert marks[0] == []


def test_build_gazetteer_min_count_and_precision() -> None:
    def item(text: str, spans: list[tuple[str, str]]):  # (word, label)
        tok = tokenize(text, "en")
        out = []
        for word, label in spans:
            s = text.index(word)
            out.append(Span(s, s + len(word), label))
        return tok.tokens, out

    items = [
        item("Seen by Rosa Diaz today", [("Rosa Diaz", "DOCTOR")]),
        item("Rosa Diaz called", [("Rosa Diaz", "DOCTOR")]),
        item("Mayo clinic", [("Mayo", "HOSPITAL")]),
        item("Mayo said", [("Mayo", "HOSPITAL")]),
        item("in Mayo we", []),
        item("Mayo again", []),
        item("Mayo again and again", []),
        item("Once Jones", [("Jones", "DOCTOR")]),
    ]
    gaz = build_gazetteer(items, min_count=2, min_precision=0.5)
    assert gaz.matches(["rosa", "diaz"]) == [(0, 2, "DOCTOR")]
    assert gaz.matches(["mayo"]) == []  # PHI in only 2 of 5 occurrences
    assert gaz.matches(["jones"]) == []  # seen once


def test_gazetteer_json_round_trip_and_errors(tmp_path) -> None:
    gaz = Gazetteer({"CITY": {("new", "york")}, "NAME": {("ana",)}})
    path = tmp_path / "g.json"
    gaz.save(path)
    back = Gazetteer.load(path)
    assert back.entries() == gaz.entries()
    (tmp_path / "bad.json").write_text('{"format_version": 99, "entries": {}}')
    with pytest.raises(ModelError, match="bad.json"):
        Gazetteer.load(tmp_path / "bad.json")


def test_word_lists(tmp_path) -> None:
    plain = tmp_path / "cities.txt"
    plain.write_text("# comment\nSanta Cruz\n\nLugo\n", encoding="utf-8")
    tabbed = tmp_path / "mixed.tsv"
    tabbed.write_text("NOMBRE\tAna María\nCIUDAD\tLugo\n", encoding="utf-8")
    gaz = merge_gazetteers(load_word_list(plain, "CIUDAD", lang="es"), load_word_list(tabbed, lang="es"))
    assert gaz.matches(["Santa", "Cruz"]) == [(0, 2, "CIUDAD")]
    assert gaz.matches(["ana", "maría"]) == [(0, 2, "NOMBRE")]
    assert len(gaz.matches(["Lugo"])) == 1
    bad = tmp_path / "bad.tsv"
    bad.write_text("NOMBRE\tAna\nno tab here\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="line 2"):
        load_word_list(bad, lang="es")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Mar\xeda\n".encode("latin-1"))
    with pytest.raises(CorpusFormatError, match="UTF-8"):
        load_word_list(latin, "NOMBRE")


@pytest.mark.parametrize(
    ("lang", "words", "label"),
    [
        ("en", ["John"], "FIRST_NAME"),
        ("en", ["France"], "COUNTRY"),
        ("en", ["Texas"], "STATE"),
        ("en", ["Gdańsk"], "CITY"),
        ("es", ["Francia"], "COUNTRY"),
        ("es", ["García"], "LAST_NAME"),
    ],
)
def test_builtin_gazetteer(lang: str, words: list[str], label: str) -> None:
    from deid_core.engine.gazetteers import builtin_gazetteer

    assert (0, len(words), label) in builtin_gazetteer(lang).matches(words)


def test_gazetteer_matches_are_the_longest_phrase_at_each_start() -> None:
    # matches() skips lengths that no phrase's first two words allow; the result
    # must be the brute-force longest match (all labels, sorted) at each start.
    import random

    from deid_core.engine.gazetteers import Gazetteer

    gaz = Gazetteer({
        "CITY": {("new", "york"), ("new", "york", "city"), ("york",), ("santa", "cruz", "de", "la", "palma")},
        "LAST": {("york",), ("de", "la", "cruz"), ("new",)},
        "FIRST": {("ana",), ("ana", "maría")},
    })
    vocab = ["New", "york", "City", "Santa", "cruz", "de", "la", "palma", "Ana", "maría", "x", "."]
    rng = random.Random(3)
    for _ in range(2000):
        words = [rng.choice(vocab) for _ in range(rng.randint(0, 9))]
        norm = [w.lower() for w in words]
        expected = []
        for i in range(len(norm)):
            for size in range(len(norm) - i, 0, -1):
                labels = gaz._phrases.get(tuple(norm[i : i + size]))
                if labels:
                    expected += [(i, i + size, label) for label in sorted(labels)]
                    break
        assert gaz.matches(words) == expected, words
