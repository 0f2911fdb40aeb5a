"""Spanish rules (MEDDOCAN labels): one (text, expected spans) table per rule family.

Examples imitate MEDDOCAN's formats but are written here; tests never read the corpus.
"""

from __future__ import annotations

import pytest

from deid_core.engine.merge import merge_spans
from deid_core.engine.rules import RuleSet, load_rules
from deid_core.engine.validators import dni_nif_letter, nass


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return load_rules("es")


def found(rules: RuleSet, text: str, labels: set[str]) -> list[tuple[str, str]]:
    spans = merge_spans(rules.find(text))
    return [(text[s.start : s.end], s.label) for s in spans if s.label in labels]


SUJETO = "ID_SUJETO_ASISTENCIA"
ASEG = "ID_ASEGURAMIENTO"

IDENTIFIERS = [
    ("DNI 12345678Z.", [("12345678Z", SUJETO)]),
    ("NIF: 12345678-Z", [("12345678-Z", SUJETO)]),
    ("NIE X1234567L", [("X1234567L", SUJETO)]),
    ("NHC: 7834651.", [("7834651", SUJETO)]),
    ("NHC:  9876257868/85.", [("9876257868/85", SUJETO)]),
    ("CIPA: nhc-1178965.", [("1178965", SUJETO)]),
    ("Historia clínica nº 456789", [("456789", SUJETO)]),
    ("Nº Historia: 380821|F. nacimiento", [("380821", SUJETO)]),
    ("CIP: nhc-794613864.", [("794613864", SUJETO)]),
    ("CIP: 91 88337255|Edad", [("91 88337255", ASEG)]),
    ("Nº SS: 44 32757815|Edad", [("44 32757815", ASEG)]),
    ("NASS: 78 94466577 98.", [("78 94466577 98", ASEG)]),
    ("NASS:28/12345678/90", [("28/12345678/90", ASEG)]),
    ("afiliación 28 12345678 90 vigente", [("28 12345678 90", ASEG)]),
    ("Episodio: 7348563.", [("7348563", "ID_CONTACTO_ASISTENCIAL")]),
    ("Dr. Pérez NºCol: 28 28 56984.", [("28 28 56984", "ID_TITULACION_PERSONAL_SANITARIO")]),
    ("Nº Colegiado: 282856984", [("282856984", "ID_TITULACION_PERSONAL_SANITARIO")]),
    ("Urología|Colegiado nº 35 35 58187|", [("35 35 58187", "ID_TITULACION_PERSONAL_SANITARIO")]),
    ("historia de 3 años", []),
    # validator negatives: wrong DNI/NIE check letter
    ("DNI 12345678A.", []),
    ("NIE X1234567A", []),
    # no cue, wrong shape
    ("Hb 12345678 mg", []),
    ("NHC: pendiente", []),
]


@pytest.mark.parametrize(("text", "expected"), IDENTIFIERS)
def test_identifiers(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    labels = {SUJETO, ASEG, "ID_CONTACTO_ASISTENCIAL", "ID_TITULACION_PERSONAL_SANITARIO"}
    assert found(rules, text, labels) == expected


CONTACT = [
    ("Tlf: 967 596 685.", [("967 596 685", "NUMERO_TELEFONO")]),
    ("Telf.: 667051570, e-mail", [("667051570", "NUMERO_TELEFONO")]),
    ("Teléfono: 915 86 80 00", [("915 86 80 00", "NUMERO_TELEFONO")]),
    ("Tfno.+34679802102 E-mail", [("34679802102", "NUMERO_TELEFONO")]),
    ("España Tfno: 986413144 ext 1530 - Fax", [("986413144 ext 1530", "NUMERO_TELEFONO")]),
    ("llamar al 653 343 435", [("653 343 435", "NUMERO_TELEFONO")]),
    ("Fax: 967 596 685.", [("967 596 685", "NUMERO_FAX")]),
    ("Fax 93 2607982 E-mail", [("93 2607982", "NUMERO_FAX")]),
    ("Fax: 985-27-36-14.", [("985-27-36-14", "NUMERO_FAX")]),
    ("Fax: + 34 93 567 22 28.", [("34 93 567 22 28", "NUMERO_FAX")]),
    ("Tfno: 920269384. Fax: 933155491 ext 6690. E-mail", [("920269384", "NUMERO_TELEFONO"), ("933155491 ext 6690", "NUMERO_FAX")]),
    ("Tfno. contacto: 908249498 ext 3868 (hermana)", [("908249498 ext 3868", "NUMERO_TELEFONO")]),
    ("Tel.: + 34 93 693 29 05.", [("34 93 693 29 05", "NUMERO_TELEFONO")]),
    ("E-mail: raquel.ruiz.ruiz@navarra.es", [("raquel.ruiz.ruiz@navarra.es", "CORREO_ELECTRONICO")]),
    # negatives: nine digits that do not start like a Spanish phone; a dose
    ("lote 123456789", []),
    ("E-mail: 957485094@terra.es", [("957485094@terra.es", "CORREO_ELECTRONICO")]),
    ("recibió 600 mg", []),
]


@pytest.mark.parametrize(("text", "expected"), CONTACT)
def test_phone_fax_email(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    labels = {"NUMERO_TELEFONO", "NUMERO_FAX", "CORREO_ELECTRONICO"}
    assert found(rules, text, labels) == expected


POSTAL = [
    ("CP: 28001.", [("28001", "TERRITORIO")]),
    ("C.P. 80 100.", [("80 100", "TERRITORIO")]),
    ("C/ Eduardo Rivas, 3 28018 Madrid.", [("28018", "TERRITORIO")]),
    ("Río Júcar, s/n E-28935 Móstoles", [("28935", "TERRITORIO")]),
    # validator negatives: provinces only go up to 52; no capitalised place after it
    ("Av. Libertad 3 99999 Madrid", []),
    ("recuento 28018 células", []),
    ("NºCol: 28 28 45987. Informe", []),
]


@pytest.mark.parametrize(("text", "expected"), POSTAL)
def test_postal_codes(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"TERRITORIO"}) == expected


DATES = [
    ("Fecha de nacimiento: 01/02/1975.", [("01/02/1975", "FECHAS")]),
    ("ingreso el 9/05/05 y", [("9/05/05", "FECHAS")]),
    ("el 15-02-07 acude", [("15-02-07", "FECHAS")]),
    ("nacido el 12/04 /2011.", [("12/04 /2011", "FECHAS")]),
    ("el 3 de marzo de 2019 ingresa", [("3 de marzo de 2019", "FECHAS")]),
    ("el 3 de marzo ingresa", [("3 de marzo", "FECHAS")]),
    ("en febrero de 2011 ingresó", [("febrero de 2011", "FECHAS")]),
    ("en noviembre del 2001.", [("noviembre del 2001", "FECHAS")]),
    ("(Septiembre 2015)", [("Septiembre 2015", "FECHAS")]),
    ("nacimiento: 23-octubre-1972.", [("23-octubre-1972", "FECHAS")]),
    ("en el año 2004, tras", [("año 2004", "FECHAS")]),
    ("diagnosticada en 2012, en", [("2012", "FECHAS")]),
    ("En el mes de Marzo de ese año", [("Marzo", "FECHAS")]),
    ("el 2019-03-05 a", [("2019-03-05", "FECHAS")]),
    ("- En marzo-09 volvió", [("marzo-09", "FECHAS")]),
    ("se retiró en sep-04, al", [("sep-04", "FECHAS")]),
    ("En enero del año 2001 se", [("enero del año 2001", "FECHAS")]),
    ("entre Marzo y Abril de 2000 y", [("Marzo y Abril de 2000", "FECHAS")]),
    ("Desde el 2006 ha", [("2006", "FECHAS")]),
    ("por Obwegeser et al. (1964), en", [("1964", "FECHAS")]),
    ("(Jégaden et al. 1993, Lindstrom", [("1993", "FECHAS")]),
    ("RT de Marzo a Mayo del 2001", [("Mayo del 2001", "FECHAS")]),
    ("se decide el alta en julio.", [("julio", "FECHAS")]),
    ("En el mes de Marzo de ese año", [("Marzo", "FECHAS")]),
    # validator negatives: 31 February, month 13; doses and counts
    ("el 31/02/2019", []),
    ("el 12/13/2019", []),
    ("en 2012 pacientes", []),
    ("TA 120/80 mmHg", []),
    ("Hospital Universitario 12 de Octubre, Madrid", []),
    ("Hospital 12 de Octubre por", []),
    ("Tabla 2012, y", []),
    ("una serie de 2012 casos", []),
]


@pytest.mark.parametrize(("text", "expected"), DATES)
def test_dates(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {"FECHAS"}) == expected


EDAD = "EDAD_SUJETO_ASISTENCIA"

AGES = [
    ("Varón de 45 años que", [("45 años", EDAD)]),
    ("Mujer de sesenta y tres años con", [("sesenta y tres años", EDAD)]),
    ("Niña de tres años de edad", [("tres años", EDAD)]),
    ("un niño de 14 meses que", [("14 meses", EDAD)]),
    ("falleció a los 8 meses de edad", [("8 meses", EDAD)]),
    ("Edad: 35 A  Sexo: H.", [("35 A", EDAD)]),
    ("Edad: 22  Sexo: M.", [("22", EDAD)]),
    ("Edad: 46 Años Sexo", [("46 Años", EDAD)]),
    ("operado a los 6 años.", [("6 años", EDAD)]),
    ("paciente varón de 52 años", [("52 años", EDAD)]),
    ("Lactante varón de un mes y 29 días", [("un mes y 29 días", EDAD)]),
    ("Fecha de nacimiento: 17/07/1979 (41 años)|Ingreso", [("41 años", EDAD)]),
    # MEDDOCAN labels every age, so 45 is found; durations are not ages
    ("dolor de 3 años de evolución", []),
    ("hace 3 años", []),
    ("tratamiento durante 2 meses", []),
    ("A los 3 meses presentó", []),
    ("recidiva a los 2 años de la cirugía", []),
    ("su hija de 50 años", []),
    ("hijo mediano (21 años) sano", []),
]


@pytest.mark.parametrize(("text", "expected"), AGES)
def test_ages(rules: RuleSet, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text, {EDAD}) == expected


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("12345678Z", True),
        ("12345678z", True),
        ("12345678-Z", True),
        ("00000000T", True),
        ("12345678A", False),
        ("X1234567L", True),
        ("Y1234567X", True),
        ("Z1234567R", True),
        ("X1234567A", False),
        ("1234567Z", False),
    ],
)
def test_dni_nif_letter(value: str, valid: bool) -> None:
    assert dni_nif_letter(value, None) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("281234567840", True),  # 28*10^8 + 12345678 = 2812345678 -> mod 97 = 40
        ("28/12345678/40", True),
        ("281234567841", False),
        ("28123456784", False),
    ],
)
def test_nass_checksum(value: str, valid: bool) -> None:
    assert nass(value, None) is valid


def test_builtin_spanish_labels_are_meddocan() -> None:
    from deid_core.schemes import load_scheme

    scheme = set(load_scheme("meddocan").names)
    assert set(load_rules("es").labels) <= scheme


def test_anchor_windows_find_what_a_full_scan_finds(rules: RuleSet) -> None:
    tables = [IDENTIFIERS, CONTACT, POSTAL, DATES, AGES]
    texts = [text for table in tables for text, _ in table]
    for text in [*texts, "\n".join(texts), " ".join(texts)]:
        assert rules.find(text) == rules.find(text, use_anchors=False)
