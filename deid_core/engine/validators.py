"""Named checks that a regex match really is the identifier it looks like.

A regex can say "eight digits and a letter"; only a checksum can say "this is a
DNI". Rules name a validator in YAML, so the set of validators is a registry
of plain functions ``(span_text, match) -> bool``. ``span_text`` is the text of
the rule's PHI group; ``match`` gives access to named groups (``day``,
``month``, ``year``) for date checks. Validators never log or raise with the
text they see.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the lexicons are loaded lazily, inside the validators that need them
    from deid_core.engine.lexicons import Lexicon

Validator = Callable[[str, "re.Match[str]"], bool]

VALIDATORS: dict[str, Validator] = {}

_DIGITS = re.compile(r"\d+")

# Month names and abbreviations in English and Spanish, casefolded, dot removed.
MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    [
        ("january", "jan", "enero", "ene"),
        ("february", "feb", "febrero"),
        ("march", "mar", "marzo"),
        ("april", "apr", "abril", "abr"),
        ("may", "mayo", "may"),
        ("june", "jun", "junio"),
        ("july", "jul", "julio"),
        ("august", "aug", "agosto", "ago"),
        ("september", "sep", "sept", "septiembre", "setiembre", "set"),
        ("october", "oct", "octubre"),
        ("november", "nov", "noviembre"),
        ("december", "dec", "diciembre", "dic"),
    ],
    start=1,
):
    for _name in _names:
        MONTHS[_name] = _number


def register(name: str) -> Callable[[Validator], Validator]:
    """Add a validator to the registry under ``name`` (used by YAML rules)."""

    def wrap(fn: Validator) -> Validator:
        VALIDATORS[name] = fn
        return fn

    return wrap


def get_validator(name: str) -> Validator | None:
    return VALIDATORS.get(name)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


@register("luhn")
def luhn(text: str, match: re.Match[str] | None = None) -> bool:
    """Credit-card style mod-10 check over the digits of the span."""
    digits = _digits(text)
    if not 12 <= len(digits) <= 19:
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


@register("dni_nif_letter")
def dni_nif_letter(text: str, match: re.Match[str] | None = None) -> bool:
    """Spanish DNI/NIF (8 digits + letter) or NIE (X/Y/Z + 7 digits + letter) check letter."""
    compact = re.sub(r"[\s.\-]", "", text).upper()
    if len(compact) != 9:
        return False
    head, letter = compact[:-1], compact[-1]
    if head[0] in "XYZ":
        head = str("XYZ".index(head[0])) + head[1:]
    if not head.isdigit() or not letter.isalpha():
        return False
    return _DNI_LETTERS[int(head) % 23] == letter


@register("nass")
def nass(text: str, match: re.Match[str] | None = None) -> bool:
    """Spanish social security number: 2-digit province, 8-digit number, mod-97 control."""
    digits = _digits(text)
    if len(digits) != 12:
        return False
    province, number, control = int(digits[:2]), int(digits[2:10]), int(digits[10:])
    base = province * 10**8 + number if number >= 10**7 else province * 10**7 + number
    return base % 97 == control


@register("ssn_area")
def ssn_area(text: str, match: re.Match[str] | None = None) -> bool:
    """US SSN structure: area not 000/666/9xx, group not 00, serial not 0000."""
    digits = _digits(text)
    if len(digits) != 9:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    if area in ("000", "666") or area[0] == "9":
        return False
    return group != "00" and serial != "0000"


@register("ipv4")
def ipv4(text: str, match: re.Match[str] | None = None) -> bool:
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part.isdigit() or len(part) > 3 or int(part) > 255:
            return False
        if len(part) > 1 and part[0] == "0":
            return False  # 01.02.03.04 is a version or a date, not an address
    return True


def _first_int(text: str) -> int | None:
    m = _DIGITS.search(text)
    return int(m.group()) if m else None


@register("age_over_89")
def age_over_89(text: str, match: re.Match[str] | None = None) -> bool:
    """HIPAA singles out ages over 89; younger ages are left to the CRF."""
    value = _first_int(text)
    return value is not None and 89 < value < 130


@register("plausible_age")
def plausible_age(text: str, match: re.Match[str] | None = None) -> bool:
    value = _first_int(text)
    return value is not None and 0 <= value < 130


def _month_value(raw: str) -> int | None:
    raw = raw.strip().rstrip(".").casefold()
    if raw.isdigit():
        return int(raw)
    return MONTHS.get(raw)


def _year_value(raw: str) -> int | None:
    raw = raw.strip().lstrip("'’")
    if not raw.isdigit():
        return None
    value = int(raw)
    if len(raw) == 2:
        return 2000 + value  # any leap-year-consistent century will do for validity
    if len(raw) == 4 and 1800 <= value <= 2199:
        return value
    return None


@register("valid_date")
def valid_date(text: str, match: re.Match[str] | None = None) -> bool:
    """Calendar check on the named groups ``day``, ``month`` and ``year`` when present.

    Rules decide the field order (MM/DD in English, DD/MM in Spanish) through
    group names, so one validator serves every format. A missing year allows
    29 February.
    """
    if match is None:
        return False
    groups = match.groupdict()
    day_raw, month_raw, year_raw = groups.get("day"), groups.get("month"), groups.get("year")
    year = None
    if year_raw is not None:
        year = _year_value(year_raw)
        if year is None:
            return False
    month = None
    if month_raw is not None:
        month = _month_value(month_raw)
        if month is None or not 1 <= month <= 12:
            return False
    if day_raw is not None:
        day_digits = _digits(day_raw)
        if not day_digits:
            return False
        day = int(day_digits)
        if month is None:
            return 1 <= day <= 31
        last = calendar.monthrange(year if year is not None else 2000, month)[1]
        return 1 <= day <= last
    return month is not None or year is not None


@register("es_postal_code")
def es_postal_code(text: str, match: re.Match[str] | None = None) -> bool:
    """Spanish postal codes start with a province number 01-52."""
    digits = _digits(text)
    return len(digits) == 5 and 1 <= int(digits[:2]) <= 52


# Words that make "5/10" or "3/5" a score, a strength grade or a fraction, not a date.
_SCORE_CONTEXT = re.compile(
    r"(?i:\b(?:pain|strength|score|scale|rated?|rating|power|grade[ds]?|motor|reflex(?:es)?|murmur"
    r"|down\s+from|up\s+from|out\s+of|apgars?|gcs|vas|nrs"
    # symptoms rated out of ten: "chest pressure 6/10", "HA 4/10"
    r"|pressure|discomfort|ha|headache|aches?|cp|nausea|soreness"
    # ventilator and pressure settings: "PS 10/5", "CPAP 12/5", "AC 500/14/5"
    r"|ps|peep|cpap|bipap|ipap|epap|vent|ac|simv|prvc|cmv|settings?|fio2|tv|vt|bp|nbp|abp|art|pip)\b[^\n]{0,12})$"
)


def _no_cue_before(cue: re.Pattern[str], match: re.Match[str], width: int) -> bool:
    """Whether ``cue`` (anchored at its end) does not end right before ``match``, within ``width`` characters."""
    start = match.start()
    return cue.search(match.string[max(0, start - width) : start]) is None


@register("month_year_short")
def month_year_short(text: str, match: re.Match[str] | None = None) -> bool:
    """A "3/98" or "12/2009": a month 1-12 and a year, not after a score or vent-setting word."""
    if match is None or not valid_date(text, match):
        return False
    return _no_cue_before(_SCORE_CONTEXT, match, 30)


# A preposition of time right before "10/1" makes it a date whatever came before ("down from 64 kg on 10/1").
_DATE_CUE = re.compile(r"(?i:\b(?:on|since|as\s+of|dated|effective|starting|started)[ \t]+)$")


@register("short_date")
def short_date(text: str, match: re.Match[str] | None = None) -> bool:
    """A yearless "9/14": calendar-valid and not right after a score word ("Pain is 7/10") unless "on" or "since" precedes it."""
    if match is None or not valid_date(text, match):
        return False
    return not _no_cue_before(_DATE_CUE, match, 16) or _no_cue_before(_SCORE_CONTEXT, match, 30)


# Words after which "from 5-8" or "on 2-4" is a range of values, not a month and day, when no
# value of their own comes between ("HR from 80-100"; but "INR 2.3 on 3-14" is a date).
_MEASURE_CONTEXT = re.compile(
    r"(?i:\b(?:hr|sbp|dbp|map|rr|resp(?![ \t]+(?:failure|distress|arrest|therapy|therapist|acidosis|alkalosis))|sats?|spo2|o2|nc|fm|gtt|drip|dose|doses|titrated|weaned|increased"
    r"|decreased|range[ds]?|ranging|varied|varying|between|temp|cvp|pad|u/?o|uop|output|glucose|fs|fsbs|bs"
    r"|k|mg|na|hct|hgb|plt|wbc|inr|ptt|lactate|rate|volume|peep|ps|fio2|tv|vt|cpap|bipap|pain|score)\b[^\d\n]{0,16})$"
)


@register("dash_date")
def dash_date(text: str, match: re.Match[str] | None = None) -> bool:
    """A yearless "3-14" after a date cue: calendar-valid, and no vital sign, drip or lab within a few
    words before the cue ("HR from 80-100", "weaned on 5-8"), where the pair is a range."""
    if match is None or not valid_date(text, match):
        return False
    return _no_cue_before(_MEASURE_CONTEXT, match, 28)


# Cues after which a phone-shaped number belongs to another rule (fax, record, episode).
_OTHER_CUE = re.compile(
    r"(?i:\b(?:fax(?:ed\s+to)?|nhc|episodio|nass|mrn)\b\.?\s*(?:#|no\.?|n[º°])?\s*[:#.]?\s*(?:\+\s?)?\(?)$"
)


@register("phone_context")
def phone_context(text: str, match: re.Match[str] | None = None) -> bool:
    """A phone shape right after a fax, record or episode cue is left to that cue's rule."""
    if match is None:
        return True
    return _no_cue_before(_OTHER_CUE, match, 20)


# -- names and places read against the lexicons (deid_core/engine/lexicons.py) -------------

_NAME_WORD = re.compile(r"[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*")


#: ``str.translate`` tables that keep only the ASCII capitals / lower-case letters.
_ONLY_UPPER = {i: None for i in range(128) if not chr(i).isupper()}
_ONLY_LOWER = {i: None for i in range(128) if not chr(i).islower()}


def case_counts(text: str) -> tuple[int, int]:
    """How many upper- and lower-case letters ``text`` holds (rules and features read line case)."""
    if text.isascii():  # counted in C: on ASCII, isupper/islower are exactly A-Z/a-z
        return len(text.translate(_ONLY_UPPER)), len(text.translate(_ONLY_LOWER))
    return sum(1 for c in text if c.isupper()), sum(1 for c in text if c.islower())


def _line_around(text: str, start: int, end: int) -> str:
    """The line around [start, end), or 80 characters either side of it in a long one."""
    lo = max(text.rfind("\n", max(0, start - 80), start) + 1, start - 80, 0)
    hi = text.find("\n", end, end + 80)
    return text[lo : hi if hi >= 0 else min(len(text), end + 80)]


def _caps_line(text: str, start: int, end: int) -> bool:
    """Is the line around [start, end) written in capitals? Then case says nothing about a name."""
    upper, lower = case_counts(_line_around(text, start, end))
    return upper >= 6 and upper > 3 * lower


def _caseless_line(text: str, start: int, end: int) -> bool:
    """Is the line around [start, end) written in capitals or in lower case? Then case says nothing."""
    return _caps_line(text, start, end) or _lower_line(text, start, end)


_CAPITALISED = re.compile(r"[^\W\d_a-z](?:['’][^\W\d_])?[^\W\d_A-Z]")


def _lower_line(text: str, start: int, end: int) -> bool:
    """Is the line around [start, end) written in lower case? Then, as in capitals, case says nothing."""
    upper, lower = case_counts(_line_around(text, start, end))
    return lower >= 6 and upper * 20 <= lower


# Short first names that are also clinical shorthand or calendar words, and so on the stop
# list ("PEG", "ED", "May"): a name only right after a kinship word, capitalised, in a
# mixed-case line ("wife Peg", "husband Ed").
_KIN_STOP_NAMES = frozenset({"peg", "ed", "jan", "may", "will", "tia", "aline", "junior"})
_INITIALS_NAME = re.compile(r"(?i)^[a-z]j$")


def _name_words(
    text: str, match: re.Match[str] | None, *, strong: bool, unknown_without_case: bool = False,
    common_capitalised: bool = False, multi_strong: bool = False,
) -> bool:
    from deid_core.engine.lexicons import AMBIGUOUS, COMMON, STOP, UNKNOWN, load_lexicon

    lexicon = load_lexicon("en")
    words = _NAME_WORD.findall(text)
    caps = match is not None and _caps_line(match.string, match.start(), match.end())
    # In a capitals or lower-case line case is no evidence, so a word in no list
    # ("SON DMITRI", "daughter funmi") counts after a strong-enough cue.
    caseless = unknown_without_case and match is not None and (
        caps or _lower_line(match.string, match.start(), match.end())
    )
    # In two-word names every word must stand on its own: "MR. JONES SEEN" is not "Jones Seen".
    multi = sum(1 for w in words if len(w) > 1) > 1
    seen = False
    for word in words:
        if len(word) == 1:  # an initial: "J. Smith"
            continue
        seen = True
        kind = lexicon.classify(word)
        # "Hall", "McDonald", "O'Brien"; not an abbreviation's plural ("PFTs", "ABGs")
        capitalised = _CAPITALISED.match(word) is not None and not caps
        if kind == STOP and not (
            common_capitalised and not multi and capitalised and word.lower() in _KIN_STOP_NAMES
        ):
            return False
        if common_capitalised and not multi and _INITIALS_NAME.match(word):
            continue  # "son rj called", "SONS DJ AND TREY": initials that a family uses as a name
        # "mom kayla breastfeeding": a lower-case "-ing" word in no list is a verb, not a surname
        if kind == UNKNOWN and caseless and len(word) >= 3 and not (multi and word.lower().endswith("ing")):
            continue
        if kind in (AMBIGUOUS, UNKNOWN) and not (capitalised or (strong and (multi_strong or not multi))):
            return False
        if kind == COMMON and not (capitalised and (strong or (common_capitalised and not multi))):
            return False
    return seen


@register("person_strong")
def person_strong(text: str, match: re.Match[str] | None = None) -> bool:
    """Name words after a title or before a credential ("Dr. Young", "J. Hall RN", "mr. smith").

    The cue is strong, so an ambiguous name ("Young") or a word in no list is a
    name; a stop word ("Dr. aware", "MD notified") or a lower-case English word
    is not.
    """
    return _name_words(text, match, strong=True)


@register("person_strong_not_place")
def person_strong_not_place(text: str, match: re.Match[str] | None = None) -> bool:
    """``person_strong``, but no lexicon place: after a cue that is also a preposition ("fr" is
    "Father" and "from"), a town is the likelier reading ("fr boston")."""
    from deid_core.engine.lexicons import load_lexicon

    return not load_lexicon("en").is_place(text.strip()) and person_strong(text, match)


@register("person_weak")
def person_weak(text: str, match: re.Match[str] | None = None) -> bool:
    """Name words after a contact verb or a kinship word ("spoke with Hope", "wife mary").

    A lexicon name counts; an ambiguous one ("Hope", "Will") or one in no list
    only with a capital letter in a line that is not all capitals.
    """
    return _name_words(text, match, strong=False)


@register("person_caseless")
def person_caseless(text: str, match: re.Match[str] | None = None) -> bool:
    """A name in parentheses after a service or role ("interpreter (faadumo)", "SW (IMANI)").

    As ``person_weak``, except that in a capitals or lower-case line a word in no
    list (three letters or more) counts: the parentheses after a role hold a name.
    """
    return _name_words(text, match, strong=False, unknown_without_case=True)


@register("person_kin")
def person_kin(text: str, match: re.Match[str] | None = None) -> bool:
    """A relative's name after a kinship word ("wife Mary", "SON DMITRI", "daughter funmi").

    As ``person_weak``, except that in a capitals or lower-case line a word in
    no list (three letters or more) counts: a kinship word is followed by a
    name far more often than by an unlisted word, and real notes name relatives
    the lexicons do not hold.
    """
    # "husband Norm", "wife Joy": a capitalised English word right after the kinship word, on its
    # line, is a name in a mixed-case line (not "sister\n\nFollowup Instructions").
    same_line = match is not None and "\n" not in match.string[match.start() : match.start(match.lastindex or 0)]
    return _name_words(text, match, strong=False, unknown_without_case=True, common_capitalised=same_line)


@register("person_kin_word")
def person_kin_word(text: str, match: re.Match[str] | None = None) -> bool:
    """A relative's name that may also be a word ("wife summer says"): the rule's verb is the cue.

    A kinship word before and a verb after ("called", "visited") make a name of
    a lexicon name, an ambiguous one ("summer", "hope") or a word in no list,
    in any case; a stop word or an English word that is no name ("present",
    "aware") is not one.
    """
    from deid_core.engine.lexicons import COMMON, STOP, load_lexicon

    words = _NAME_WORD.findall(text)
    if len(words) != 1 or len(words[0]) < 3:
        return False
    return load_lexicon("en").classify(words[0]) not in (COMMON, STOP)


_AGE_WORDS_BEFORE = re.compile(r"(?i)(?:\b(?:age|aged|is|was|turned|turns|turning|now)[ \t]*:?[ \t]*|,[ \t]*)$")
_AGE_WORDS_AFTER = re.compile(r"(?i)[ \t]*(?:-[ \t]*)?(?:years?|yrs?|yo\b|y/o|y\.o\.|year-old|-year|,|\)|$|\n)")


@register("spelled_age_context")
def spelled_age_context(text: str, match: re.Match[str] | None = None) -> bool:
    """ "ninety-four" is an age after "age", "is", "turned" or a comma, or before "years" or a comma."""
    if match is None:
        return False
    full = match.string
    before = full[max(0, match.start(1) - 16) : match.start(1)]
    if _AGE_WORDS_BEFORE.search(before) is None:
        return False
    return _AGE_WORDS_AFTER.match(full, match.end(1)) is not None


_SIGNATURE_BEFORE = re.compile(
    r"(?:^|[\n.,;:(/\-–—]|\b(?:by|to|with|w/|per|from|and|cc|signed)\b)[ \t]*$", re.IGNORECASE
)
_SIGNATURE_AFTER = re.compile(
    r"[ \t]*(?:,[ \t]*)?[A-Za-z-]+\.?[ \t]*(?:$|\n|[\d,;)(/#]|(?i:x[ \t]?\d|ext\b|pager\b|pg\b|pgr\b|beeper\b|on\b|at\b))"
)


@register("person_signature")
def person_signature(text: str, match: re.Match[str] | None = None) -> bool:
    """A name before a credential: strong in a signature, weak mid-sentence.

    A signature ("J. Smith RN", "--Hall, RN 6/3", "per Young MD") begins a
    line or follows punctuation or a cue word, and its credential ends the line
    or comes before a date, a number or a pager. Elsewhere "WOUND CARE RN",
    "needs md signature" or "NH RN Tracey" are words before a credential, so
    the name must be a name on its own (``person_weak``).
    """
    if match is None:
        return person_strong(text, match)
    return _name_words(text, match, strong=_in_signature(match))


def _in_signature(match: re.Match[str]) -> bool:
    """Does the match sit where a signature's name does: at a line start or after punctuation or a
    cue word, with its credential ending the line or coming before a date, a number or a pager?"""
    full, start, end = match.string, match.start(), match.end()
    line_start = full.rfind("\n", 0, start) + 1
    return (
        _SIGNATURE_BEFORE.search(full[line_start:start]) is not None
        and _SIGNATURE_AFTER.match(full, end, min(len(full), end + 40)) is not None
    )


@register("person_signature_strong")
def person_signature_strong(text: str, match: re.Match[str] | None = None) -> bool:
    """Two name words before a credential: ``person_strong``, and in a signature (as
    ``person_signature`` says) an ambiguous word or one in no list counts in every position of
    the name, in any case ("-annalise brogan, rn  #3-6620"; session 19)."""
    if match is None:
        return person_strong(text, match)
    if _in_signature(match):
        from deid_core.engine.lexicons import load_lexicon

        department = load_lexicon("en").department
        if any(len(w) > 1 and w.lower() in department for w in _NAME_WORD.findall(text)):
            return False  # "pall care np", "wound care rn": a service, not a name
        return _name_words(text, match, strong=True, unknown_without_case=True, multi_strong=True)
    return person_strong(text, match)


_ORG_GLUE = frozenset({"of", "the", "and", "&", "for", "at"})
# Two letters, or clinical shorthand ending in x ("Cx", "BCx", "Hx"): no organisation alone.
_SHORTHAND_X = re.compile(r"^(?:\w{1,2}|[A-Z]{0,2}x)$")
_US_STATE_CODES = frozenset(
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC"
    " ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY".split()
)


@register("organisation_name")
def organisation_name(text: str, match: re.Match[str] | None = None) -> bool:
    """An employer, agency or facility after a cue ("worked at General Dynamics", "through Lincare", "kindred liaison").

    No word may be a stop word, and one word alone needs three letters and may
    not be shorthand such as "BCx"; a state code may end the name ("BCBS MA"). At least one word that is not a department
    word ("general", "care") must be a name, a place, a word in no list, or (in
    a mixed-case line) a capitalised word. Acronyms of three letters or more count in a capitals line, and of
    four or more elsewhere ("PVTA"; not "ABG").
    """
    from deid_core.engine.lexicons import COMMON, STOP, load_lexicon

    lexicon = load_lexicon("en")
    words = _NAME_WORD.findall(text)
    if not words:
        return False
    caps = match is not None and _caps_line(match.string, match.start(), match.end())
    if len(words) == 1 and (lexicon.classify(words[0]) == COMMON or _SHORTHAND_X.match(words[0])):
        return False  # "Insurance pending", "Oxygen through", "Cx pending", "BCx pending"
    evidence = False
    for i, word in enumerate(words):
        low = word.lower()
        if low in _ORG_GLUE and 0 < i < len(words) - 1:
            continue
        if low in lexicon.department:  # "General Dynamics", "Life Care Center": no evidence, no veto
            continue
        if low == "plan" and i > 0 and words[i - 1].lower() == "health":  # "Tufts Health Plan"
            continue
        if i == len(words) - 1 and i > 0 and word in _US_STATE_CODES:  # "BCBS MA": the plan's state
            continue
        kind = lexicon.classify(word)
        acronym = word.isupper() and len(word) >= (3 if caps else 4)
        if kind == STOP:
            return False
        capitalised = word[0].isupper() and not caps and not word.isupper()
        if word.isupper() and not caps and not acronym:
            return False
        if kind != COMMON or capitalised or acronym or lexicon.is_place(word):
            evidence = True
    return evidence


# Capitalised words after "works at" that say where or when, not for whom.
_NOT_EMPLOYERS = frozenset({
    "home", "night", "nights", "times", "present", "work", "school", "church", "hospital", "least",
    "first", "last", "all", "baseline", "rest", "length", "risk", "bedside", "noon", "midnight",
})


@register("employer_name")
def employer_name(text: str, match: re.Match[str] | None = None) -> bool:
    """An employer after a work cue ("works at TJX", "a chef at Legal Sea Foods"): ``organisation_name``,
    and a three-letter acronym in no list counts too, since the cue says an organisation follows."""
    from deid_core.engine.lexicons import COMMON, UNKNOWN, load_lexicon

    words = _NAME_WORD.findall(text)
    if len(words) == 1 and len(words[0]) == 3 and words[0].isupper():
        return load_lexicon("en").classify(words[0]) == UNKNOWN
    # "works at Vertex", "a professor at Northeastern": one capitalised word that is also an
    # English word names the employer in a mixed-case line; the work cue says a name follows.
    if (
        len(words) == 1 and words[0][0].isupper() and not words[0].isupper() and match is not None
        and words[0].lower() not in _NOT_EMPLOYERS
        and not _caps_line(match.string, match.start(), match.end())
        and load_lexicon("en").classify(words[0]) == COMMON
    ):
        return True
    return organisation_name(text, match)



@register("employer_name_lower")
def employer_name_lower(text: str, match: re.Match[str] | None = None) -> bool:
    """``employer_name`` in a lower-case line, where case cannot say that a name follows "works at";
    one word alone must be a name or in no list ("works for the city" is no employer)."""
    from deid_core.engine.lexicons import NAME, UNKNOWN, load_lexicon

    if match is None or not _lower_line(match.string, match.start(), match.end()):
        return False
    words = _NAME_WORD.findall(text)
    if len(words) == 1 and (len(words[0]) < 3 or load_lexicon("en").classify(words[0]) not in (NAME, UNKNOWN)):
        return False
    return employer_name(text, match)


@register("org_name_lower")
def org_name_lower(text: str, match: re.Match[str] | None = None) -> bool:
    """An employer, insurer or supplier named in a lower-case line after a cue that says one follows
    ("pt is a chemist at biogen", "ins is pemaquid mutual"): where case says nothing, a word that is
    also an English word or a surname is no evidence ("a teacher at the high school"), so one word
    must be a name, a place or in no list (three letters or more), and none a stop word."""
    from deid_core.engine.lexicons import NAME, STOP, UNKNOWN, load_lexicon

    if match is None or not _lower_line(match.string, match.start(), match.end()):
        return False
    lexicon = load_lexicon("en")
    evidence = False
    for word in _NAME_WORD.findall(text):
        kind = lexicon.classify(word)
        if kind == STOP:
            return False
        if word.lower() in lexicon.department:
            continue
        if len(word) >= 3 and (kind in (NAME, UNKNOWN) or lexicon.is_place(word)):
            evidence = True
    return evidence


# The words an insurer's name ends with ("Pinepoint Casualty", "COMMONWELL SENIOR ADVANTAGE",
# "Harborstone Senior Care Options"); insurer_any_case needs one word besides them.
_INSURER_KINDS = frozenset({
    "mutual", "health", "healthcare", "plan", "insurance", "ins", "co", "company", "life", "benefit",
    "benefits", "care", "select", "choice", "advantage", "network", "partners", "alliance", "connect",
    "community", "cross", "shield", "casualty", "indemnity", "assurance", "trust", "fund", "group",
    "preferred", "options", "comp", "inc", "healthnet", "senior", "medicare", "retiree", "workers",
    "&", "and", "of", "the",
})


def _org_with_kind_words(
    text: str, match: re.Match[str] | None, kinds: frozenset[str], generic: frozenset[str] | None = None
) -> bool:
    """An organisation named before words that say what it is, in any case: besides ``kinds``, a word
    of three letters or more that is a name, a place, in no list or (capitalised in a mixed-case line)
    any word, and no stop word; in a mixed-case line every word but "of", "and", "the" capitalised.
    With ``generic``, a caseless English word also names one, and no word in ``generic`` does."""
    from deid_core.engine.lexicons import COMMON, STOP, load_lexicon

    if match is None:
        return False
    lexicon = load_lexicon("en")
    caseless = _caseless_line(match.string, match.start(), match.end())
    evidence = False
    for word in _NAME_WORD.findall(text):
        low = word.lower()
        if not caseless and low not in ("of", "and", "the") and not word[0].isupper():
            return False
        if low in kinds:
            continue
        kind = lexicon.classify(word)
        if kind == STOP:
            return False
        if generic is not None and low in generic:
            continue
        if len(word) >= 3 and (kind != COMMON or lexicon.is_place(word) or not caseless or generic is not None):
            evidence = True
    return evidence


@register("insurer_any_case")
def insurer_any_case(text: str, match: re.Match[str] | None = None) -> bool:
    """An insurer named after an insurance cue, its name ending in an insurer word ("ins: pinepoint
    casualty", "INSURANCE: COMMONWELL SENIOR ADVANTAGE", "Ins Cascadia Senior Health"; not "ins:
    private health insurance")."""
    return _org_with_kind_words(text, match, _INSURER_KINDS, _COVERAGE_WORDS)


# Words that say what kind of coverage someone has, not whose: before an insurer word they name
# nothing ("ins: private health insurance", "INS: EMPLOYER HEALTH PLAN"), while any other English
# word there does, in a caseless line too ("ins nutmeg health plan", "INS: BLUEGRASS SENIOR ADVANTAGE").
_COVERAGE_WORDS = frozenset({
    "private", "public", "commercial", "federal", "state", "government", "county", "city", "supplemental",
    "supplement", "secondary", "primary", "tertiary", "employer", "employee", "work", "job", "union",
    "medical", "dental", "vision", "drug", "prescription", "pharmacy", "part", "managed", "medigap",
    "high", "deductible", "catastrophic", "short", "long", "term", "disability", "veterans", "military",
    "own", "family", "individual", "good", "full", "limited", "basic", "standard", "other", "new", "old",
    "current", "previous", "former", "exchange", "marketplace", "free", "student", "school", "travel",
    "auto", "car", "home", "spouse", "spouse's", "wife's", "husband's", "parents", "parents'", "mom's",
    "dad's", "same", "any", "some", "no", "without", "through", "thru", "via", "retirement", "retired",
    "pension", "mental", "behavioral",
})


_AIR_WORDS = frozenset({
    "air", "med", "airmed", "care", "evac", "ambulance", "rescue", "methods", "flight", "medflight",
    "lifeflight", "life", "medevac", "medical", "network",
})


@register("air_ambulance_name")
def air_ambulance_name(text: str, match: re.Match[str] | None = None) -> bool:
    """An air ambulance named before its air words ("Big Sky AirMed", "DAKOTA AIR CARE", "pennyrile
    air"; not "by air", "via life flight")."""
    return _org_with_kind_words(text, match, _AIR_WORDS)


def _one_facility_name(text: str, match: re.Match[str] | None) -> tuple[list[str], bool] | None:
    """The words of a facility named by itself and whether one names it (a name, a place or a word
    in no list), or None when a word cannot be part of such a name: under four letters, a stop or
    department word, or not capitalised in a mixed-case line."""
    from deid_core.engine.lexicons import COMMON, STOP, load_lexicon

    if match is None:
        return None
    lexicon = load_lexicon("en")
    caseless = _caseless_line(match.string, match.start(), match.end())
    words = _NAME_WORD.findall(text)
    evidence = False
    for word in words:
        kind = lexicon.classify(word)
        if len(word) < 4 or kind == STOP or word.lower() in lexicon.department:
            return None
        if not caseless and not _CAPITALISED.match(word):
            return None
        if kind != COMMON or lexicon.is_place(word):
            evidence = True
    return words, evidence


@register("facility_one_name")
def facility_one_name(text: str, match: re.Match[str] | None = None) -> bool:
    """A home or rehab named by itself where a patient goes back to ("back to Hollowbrook", "return to
    rosecliff"): each word four letters or more and no stop word, and one a name, a place or a word in
    no list; in a mixed-case line every word capitalised, so "back to dialysis tomorrow" and "return
    to Baseline" are none."""
    found = _one_facility_name(text, match)
    return found is not None and found[1]


# Words hospitals are named by, which the lexicon reads as plain English ("tx'd to Methodist").
_HOSPITAL_NAME_WORDS = frozenset({
    "methodist", "memorial", "baptist", "presbyterian", "deaconess", "mercy", "infirmary", "lutheran",
    "adventist", "providence", "covenant", "good", "samaritan", "sacred", "heart", "trinity", "unity",
    "general", "regional", "community",
})


@register("facility_after_transfer")
def facility_after_transfer(text: str, match: re.Match[str] | None = None) -> bool:
    """The hospital after a transfer ("tx'd to Deaconess", "FLOWN TO METHODIST"): as
    ``facility_one_name``, and a word hospitals are named by also says a hospital is meant."""
    found = _one_facility_name(text, match)
    if found is None:
        return False
    words, evidence = found
    return evidence or (
        any(w.lower() in _HOSPITAL_NAME_WORDS for w in words) and words[-1].lower() not in ("good", "sacred")
    )


@register("facility_before_ed")
def facility_before_ed(text: str, match: re.Match[str] | None = None) -> bool:
    """A hospital before its ED ("Hasbro ED", "HFH ED"): ``organisation_name``, and an acronym of three
    to five capitals in no list counts in any line, since "ED" after it says a hospital is named."""
    from deid_core.engine.lexicons import UNKNOWN, load_lexicon

    word = text.strip()
    if re.fullmatch(r"[A-Z]{3,5}", word) and load_lexicon("en").classify(word) == UNKNOWN:
        return True
    return organisation_name(text, match)


@register("county_name")
def county_name(text: str, match: re.Match[str] | None = None) -> bool:
    """The words before "County" or "Parish" ("scott county", "Bradley County"), judged as a
    name after a weak cue (``person_caseless``), since counties are named after people and
    places: a lexicon name or place, a capitalised word in a mixed-case line, or a word in no
    list in a lower-case or capitals line; not a plain word ("this county", "off County Rd")."""
    words = text.split()
    return len(words) > 1 and _name_words(" ".join(words[:-1]), match, strong=False, unknown_without_case=True)


# Parts of a country that notes name as if they were one, and names Faker's list spells otherwise.
_EXTRA_COUNTRIES = frozenset({
    "england", "scotland", "wales", "northern ireland", "cabo verde", "cape verde", "puerto rico", "uk",
    "the uk", "holland", "burma", "ivory coast", "czech republic", "czechia", "russia", "south korea",
    "north korea", "vietnam", "laos", "syria", "iran", "taiwan", "the philippines", "the dominican republic",
})


@lru_cache(maxsize=1)
def _countries() -> frozenset[str]:
    from faker.providers.address.en_US import Provider as Address

    return frozenset(str(c).lower() for c in Address.countries) | _EXTRA_COUNTRIES


@register("city_before_country")
def city_before_country(text: str, match: re.Match[str] | None = None) -> bool:
    """A town before a country ("called from Shiraz, Iran", "son emrys called from cardiff, wales"):
    the rule's ``country`` group must name a country (Faker's list, and England, Wales, Cabo
    Verde...), and the town must be a name as after a weak cue (``person_caseless``) or a
    lexicon place."""
    if match is None or not match.groupdict().get("country"):
        return False
    if match.group("country").strip().lower() not in _countries():
        return False
    from deid_core.engine.lexicons import load_lexicon

    return load_lexicon("en").is_place(text.strip()) or _name_words(
        text, match, strong=False, unknown_without_case=True
    )


@register("quoted_name")
def quoted_name(text: str, match: re.Match[str] | None = None) -> bool:
    """One or two words in double quotes, each a lexicon name or a word in no list ("Hildy",
    "Horatio", "DRE"): in the hand-written sets a single quoted word of these readings was a name
    55 times in 59 (speech and common words, "fine", "cookie", are left out)."""
    from deid_core.engine.lexicons import NAME, UNKNOWN, load_lexicon

    lexicon = load_lexicon("en")
    words = _NAME_WORD.findall(text)
    return bool(words) and all(len(w) >= 2 and lexicon.classify(w) in (NAME, UNKNOWN) for w in words)


@register("place_not_country")
def place_not_country(text: str, match: re.Match[str] | None = None) -> bool:
    """``place_name``, but not a country ("returned from Haiti", "moved to poland"): a country is no
    HIPAA identifier and the hand-written sets leave it unmarked; the generator labels it COUNTRY, so a
    rule that read it as a city disagreed with the starter's own training notes a third of the time and
    was kept as a CRF feature only (session 19). A US state name that is also a country stays ("georgia")."""
    return (not _foreign_country(text) or _state_follows(match)) and place_name(text, match)


# US territories that Faker's list holds as countries: notes mark them as places.
_US_TERRITORIES = frozenset({"puerto rico", "guam", "american samoa", "northern mariana islands",
                             "united states virgin islands", "virgin islands, u.s."})


_STATE_AFTER = re.compile(r"(,?)[ \t]+([A-Za-z]{2})\b")


def _state_follows(match: re.Match[str] | None) -> bool:
    """A US state code right after the match ("Peru, IN", "Norway ME"): the town, not the country. In
    lower case the code must follow a comma ("norway, me"): "from haiti in 1991" is no Indiana."""
    if match is None:
        return False
    after = _STATE_AFTER.match(match.string, match.end(), match.end() + 8)
    if after is None or after.group(2).upper() not in _US_STATE_CODES:
        return False
    return after.group(2).isupper() or after.group(1) == ","


def _foreign_country(text: str) -> bool:
    """A country other than the US, its states and territories ("Haiti", "poland"; not "Georgia",
    "Puerto Rico"): no HIPAA identifier, and the generator labels it COUNTRY, not CITY."""
    phrase = text.strip().lower()
    return phrase in _countries() and phrase not in _US_STATE_NAMES and phrase not in _US_TERRITORIES


@register("business_name")
def business_name(text: str, match: re.Match[str] | None = None) -> bool:
    """The words before a business's kind ("Granite Ledge Builders", "HAVERHILL DISTRICT COURT"): no
    stop or department word ("Blood Bank", "Sports Bar" have none that names), and one that is a
    name, a place, a word in no list, or a capitalised word in a mixed-case line."""
    from deid_core.engine.lexicons import COMMON, STOP, load_lexicon

    if match is None or not match.groupdict().get("kind"):
        return False
    lexicon = load_lexicon("en")
    words = _NAME_WORD.findall(text[: len(text) - len(match.group("kind"))])
    caps = _caps_line(match.string, match.start(), match.end())
    evidence = False
    for word in words:
        kind = lexicon.classify(word)
        if kind == STOP or word.lower() in lexicon.department:
            return False
        capitalised = word[0].isupper() and not caps and not word.isupper()
        if kind != COMMON or capitalised or lexicon.is_place(word):
            evidence = True
    return evidence


@register("employer_not_place")
def employer_not_place(text: str, match: re.Match[str] | None = None) -> bool:
    """An employer after a job ("retired machinist from Boeing"), but not the town a
    person comes from ("retired longshoreman from Gloucester"): ``employer_name``, and
    not a place in the lexicon."""
    from deid_core.engine.lexicons import load_lexicon

    return not load_lexicon("en").is_place(text.strip()) and employer_name(text, match)


# Words that name a kind of practice, not which one ("Cardiology Associates").
_PRACTICE_WORDS = frozenset({"associates", "partners", "group", "practice", "physicians", "doctors"})


_AGENCY_KIND = re.compile(r"(?i)[ \t]+(?:ems|ambulance|fire[ \t]+(?:dept|department|rescue))$")


@register("agency_name")
def agency_name(text: str, match: re.Match[str] | None = None) -> bool:
    """ "Calumet EMS": the words before the kind of service name an organisation (``organisation_name``)."""
    name = _AGENCY_KIND.sub("", text)
    return name != text and organisation_name(name, match)


_CONGREGATION_PARTS = re.compile(
    r"^(?:(?:Mt\.?|Mount|St\.?|Saint)\s+)?(?P<name>.+?)\s+(?:AME(?:\s+Zion)?|A\.M\.E\.|Baptist|Methodist|Lutheran"
    r"|Presbyterian|Episcopal|Pentecostal|Chapel|Tabernacle|Congregational|Mennonite|Church)"
    r"(?:\s+(?:Church|of\s+God|of\s+Christ))?$",
    re.IGNORECASE,  # "MT. CALVARY BAPTIST" in a note written in capitals
)


@register("congregation_name")
def congregation_name(text: str, match: re.Match[str] | None = None) -> bool:
    """ "Mt. Zion AME", "Grace Lutheran": the words between a saint's prefix and the denomination name it."""
    from deid_core.engine.lexicons import STOP, load_lexicon

    parts = _CONGREGATION_PARTS.match(text)
    if parts is None or _CONGREGATION_PARTS.match("Our " + parts.group("name")):
        return False  # "Baptist Church": a denomination, no congregation
    words = _NAME_WORD.findall(parts.group("name"))
    if len(words) == 1 and words[0].lower() in ("first", "second", "third"):
        return True  # "First Baptist", "Second Congregational": an ordinal names many a congregation
    if len(words) == 1 and words[0][0].isupper() and not words[0].isupper():
        # "Grace Lutheran", "Bethel Tabernacle": the denomination is the cue, a capitalised word the name
        return load_lexicon("en").classify(words[0]) != STOP
    return organisation_name(parts.group("name"), match)


_RELIGIOUS = frozenset({
    "church", "chapel", "cathedral", "parish", "basilica", "shrine", "temple", "mosque", "masjid",
    "synagogue", "congregation", "fellowship", "ministries", "ministry", "tabernacle", "assembly",
    "baptist", "methodist", "lutheran", "presbyterian", "episcopal", "pentecostal", "orthodox",
    "catholic", "mennonite", "congregational", "adventist", "ame", "kingdom", "mission", "gospel",
})
_SAINTLY = re.compile(r"(?i)(?:st\.?|saint|mt\.?|mount|our[ \t]+lady[ \t]+of)[ \t]+")


@register("congregation_of_clergy")
def congregation_of_clergy(text: str, match: re.Match[str] | None = None) -> bool:
    """Where a pastor or priest comes from: a name with a religious word in it ("little zion old
    regular baptist"), or a saint's name that is no place ("st. anthony of padua"; not "st. louis")."""
    from deid_core.engine.lexicons import STOP, load_lexicon

    lexicon = load_lexicon("en")
    words = [w.lower() for w in _NAME_WORD.findall(text)]
    saint = _SAINTLY.match(text)
    if saint is None and words and words[0] in ("family's", "pt's", "patient's", "their", "his", "her", "my", "our"):
        return False
    if all(w in _RELIGIOUS or w in ("of", "the") or lexicon.classify(w) == STOP for w in words):
        return False  # "the parish", "their church district"
    if any(w in _RELIGIOUS for w in words):
        return True
    if saint is None or saint.end() == len(text):
        return False
    rest = text[saint.end():]
    return not any(lexicon.is_place(p) for p in (text, text.replace(".", ""), "saint " + rest, "st " + rest))


@register("care_facility")
def care_facility(text: str, match: re.Match[str] | None = None) -> bool:
    """Where a patient gets care ("f/u at harvard vanguard"): an organisation with a word of its own.

    As ``organisation_name``, and some word must be neither a department word
    nor a practice word: "seen at Cardiology Associates" names no practice.
    """
    from deid_core.engine.lexicons import load_lexicon

    if not organisation_name(text, match):
        return False
    lexicon = load_lexicon("en")
    return any(
        w.lower() not in lexicon.department and w.lower() not in _PRACTICE_WORDS for w in _NAME_WORD.findall(text)
    )


@register("care_facility_not_town")
def care_facility_not_town(text: str, match: re.Match[str] | None = None) -> bool:
    """As ``care_facility``, but not a town alone: "nursing home (Agawam)" says where, not which home."""
    from deid_core.engine.lexicons import load_lexicon

    return care_facility(text, match) and not load_lexicon("en").is_place(text.strip())


@register("place_then_cue")
def place_then_cue(text: str, match: re.Match[str] | None = None) -> bool:
    """A town before a hospital word ("holyoke medical", "FRANKLIN REGIONAL"): the ``place`` group is a
    lexicon place, and a one-word place is no English or stop word ("general medical", "reading medical")."""
    if match is None or match.groupdict().get("place") is None:
        return False
    return _named_place(match.group("place"))


def _named_place(phrase: str) -> bool:
    """A lexicon place of two words or more, or of one word that is a name or in no other list
    ("holyoke", "thompson"; not "reading", "general", "head")."""
    from deid_core.engine.lexicons import NAME, UNKNOWN, load_lexicon

    lexicon = load_lexicon("en")
    if not lexicon.is_place(phrase):
        return False
    words = _NAME_WORD.findall(phrase)
    return len(words) > 1 or lexicon.classify(words[0]) in (NAME, UNKNOWN)


@register("state_after_lower_place")
def state_after_lower_place(text: str, match: re.Match[str] | None = None) -> bool:
    """A state code after a town with no comma ("thompson ct"): the line is in lower case and the
    ``place`` group, or its last word, is a lexicon place that is no English or stop word ("head ct",
    "to nh" are not)."""
    if match is None or not _lower_line(match.string, match.start(), match.end()):
        return False
    place = match.group("place")
    words = place.split()
    return _named_place(place) or (len(words) > 1 and _named_place(words[-1]))


@register("ward_name")
def ward_name(text: str, match: re.Match[str] | None = None) -> bool:
    """A ward named after a donor ("Bigelow 9"): the word is a surname among the 20,000 most
    frequent that is no English, clinical or stop word ("levo 6", "room 6" and "pod 3" are not)."""
    from deid_core.engine.lexicons import NAME, load_lexicon

    words = _NAME_WORD.findall(text)
    if len(words) != 1:
        return False
    lexicon = load_lexicon("en")
    rank = lexicon.last.get(words[0].lower())
    return rank is not None and rank < 20_000 and lexicon.classify(words[0]) == NAME


@register("place_group")
def place_group(text: str, match: re.Match[str] | None = None) -> bool:
    """A name whose ``place`` group is a lexicon place ("HEALTHSOUTH WOBURN"; not "HealthSouth today")."""
    from deid_core.engine.lexicons import STOP, load_lexicon

    if match is None or match.groupdict().get("place") is None:
        return False
    lexicon = load_lexicon("en")
    place = match.group("place")
    return lexicon.is_place(place) and lexicon.classify(place) != STOP


@register("place_name")
def place_name(text: str, match: re.Match[str] | None = None) -> bool:
    """A place after "lives in", "moved to": a lexicon place, or capitalised words that are not stop words."""
    from deid_core.engine.lexicons import COMMON, STOP, load_lexicon

    lexicon = load_lexicon("en")
    if lexicon.is_place(text.strip()):
        return text.strip().lower() not in lexicon.stop
    words = _NAME_WORD.findall(text)
    if not words:
        return False
    caps = match is not None and _caps_line(match.string, match.start(), match.end())
    for word in words:
        kind = lexicon.classify(word)
        if kind == STOP or caps or not word[0].isupper() or (kind == COMMON and len(words) == 1):
            return False
    return True


_FACILITY_CUE_WORDS = frozenset({
    "medical", "nursing", "health", "rehabilitation", "rehab", "family", "primary", "living", "regional", "home",
    "elder", "and", "&", "funeral", "independent", "retirement", "air", "life", "med", "reg", "healthcare", "care",
    "hospital", "senior", "assisted", "urgent", "memorial", "general", "community", "university",
})
# Cues of a home people live in, or of an agency that cares for them there, whose names are
# often plain words ("Sunrise Senior Living", "Beacon Hospice").
# The cue phrase is built from name words, so "&" is not in it ("NURSING & REHAB" -> "nursing rehab").
_PLAIN_NAME_CUES = ("senior living", "assisted living", "independent living", "nursing home",
                    "nursing and rehab", "nursing rehab", "health and rehab", "health rehab",
                    "retirement", "hospice", "home care", "home health")
# Plain words that say which home or what kind of care, not what it is called
# ("previous nursing home", "residential hospice"); cue words never get this far.
_NOT_A_HOME_NAME = frozenset({
    "previous", "prior", "current", "former", "usual", "old", "regular", "own", "private", "skilled",
    "other", "another", "temporary", "permanent", "respite", "adult", "memory", "group", "local", "family",
    "nearest", "closest", "original", "last", "next", "first", "second", "third", "good", "nice", "small",
    "large", "big", "state", "county", "city", "town", "veterans",
    "facility", "residence", "center", "place", "new", "same", "different",
    "residential", "comfort", "pediatric", "routine", "continuous", "outpatient", "daily", "weekly",
    "agency", "visiting", "medicare", "medicaid", "services",
    "through", "thru", "into", "onto", "under", "over", "within", "without", "toward", "towards",
    "across", "around", "between", "during", "near", "until", "along",
})
# "Life Care Center of Nashoba", "Boston Health Care for the Homeless": the words before
# "of" / "for the" carry the cue.
_FACILITY_TAIL = re.compile(r"\s+(?:of|for\s+the)\s+(?:the\s+)?(?=[A-Z])")
# Words that begin place and facility names ("West Roxbury", "Good Samaritan", "Port Huron").
_PLACE_PREFIXES = frozenset({
    "north", "south", "east", "west", "new", "port", "lake", "fort", "mount", "mt", "good", "saint", "st", "san",
    "santa", "el", "la", "los", "las", "great", "little", "upper", "lower",
})


@register("facility_name")
def facility_name(text: str, match: re.Match[str] | None = None) -> bool:
    """Words before a facility cue ("Spaulding Rehab", "Pine Ridge Manor", "spaulding rehab").

    No word may be a department or specialty word ("Heart Failure Clinic",
    "Cancer Center", "acute rehab") or a lower-case stop word; and at least one
    word must be a name, a place, a word in no list, or a capitalised word in a
    mixed-case line. In a lower-case or capitals phrase, the name word and the
    cue must share their case ("echocardiogram Hospital Course" is two things).
    Homes and home-care agencies ("senior living", "nursing home", "hospice") may
    carry a plain English word as their name there ("SUNRISE SENIOR LIVING"),
    unless it says which home rather than naming it ("previous nursing home").
    """
    from deid_core.engine.lexicons import COMMON, STOP, load_lexicon

    lexicon = load_lexicon("en")
    text = _FACILITY_TAIL.split(text, maxsplit=1)[0]
    words = _NAME_WORD.findall(text)
    if len(words) < 2:
        return False
    caps = match is not None and _caps_line(match.string, match.start(), match.end())
    cue_free = words[:-1]
    # the cue may be two or three words ("medical center", "nursing home", "nursing and rehab",
    # "healthcare center", "home health services")
    while cue_free and cue_free[-1].lower() in _FACILITY_CUE_WORDS:
        cue_free = cue_free[:-1]
    cue_phrase = " ".join(w.lower() for w in words[len(cue_free):])
    # "west matthew nursing home", "good samaritan hospital": a place prefix is part of the name, no evidence
    if len(cue_free) > 1 and cue_free[0].lower().rstrip(".") in _PLACE_PREFIXES:
        cue_free = cue_free[1:]
    if not cue_free:
        return False
    # A practice is named after its place or founder and may carry its specialty
    # ("Wellesley Cardiology Associates"), and so may a facility ("Harborview Acute
    # Rehab"): a department word is allowed beside a word that is in no common-word,
    # stop-word or department list. A clinic named by its specialty alone is a department.
    practice = words[-1].lower() in {"associates", "partners", "group", "practice"}
    # Only where case says nothing may a plain word name a home ("heritage nursing home").
    plain_named = (
        any(c in cue_phrase for c in _PLAIN_NAME_CUES)
        and match is not None
        and (caps or _lower_line(match.string, match.start(), match.end()))
    )
    named = any(
        w.lower() not in lexicon.department and lexicon.classify(w) not in (COMMON, STOP) for w in cue_free
    )
    evidence = False
    for word in cue_free:
        low = word.lower()
        if low in lexicon.department:
            if practice or named:
                continue
            return False
        kind = lexicon.classify(word)
        capitalised = word[0].isupper() and not caps and not word.isupper()
        # "SUNRISE SENIOR LIVING", "beacon hospice": a home or a home-care agency is often
        # named with a plain word, and where case says nothing the cue has to carry it.
        homely = kind == COMMON and plain_named and low not in _NOT_A_HOME_NAME
        if kind in (STOP, COMMON) and not capitalised and not homely:
            return False
        if kind not in (COMMON, STOP) or capitalised or homely or lexicon.is_place(word):
            evidence = True
    if evidence and not any(w[0].isupper() and not caps and not w.isupper() for w in cue_free):
        # a lower-case or capitals name: the cue word must be written the same way
        cue = words[-1]
        first = cue_free[0]
        if first.isupper() != cue.isupper() or first.islower() != cue.islower():
            return False
    return evidence


@register("place_lexicon")
def place_lexicon(text: str, match: re.Match[str] | None = None) -> bool:
    """A US place from the lexicon after a weak cue ("from Worcester", "in new york"); not a country
    abroad that shares a town's name ("from Poland", "in peru"; session 19).

    A place that is also a common word ("Mobile", "Orange") needs its capital
    letter in a mixed-case line; a stop word never counts.
    """
    from deid_core.engine.lexicons import AMBIGUOUS, COMMON, STOP, load_lexicon

    lexicon = load_lexicon("en")
    phrase = text.strip()
    if not lexicon.is_place(phrase) or (_foreign_country(phrase) and not _state_follows(match)):
        return False
    words = _NAME_WORD.findall(phrase)
    caps = match is not None and _caps_line(match.string, match.start(), match.end())
    if len(words) == 1:
        kind = lexicon.classify(words[0])
        if kind == STOP:
            return False
        after_from_or_to = match is not None and re.match(r"(?i)(?:from|to)\b", match.group(0)) is not None
        travel = match is not None and _after_travel_verb(match)
        if after_from_or_to and _common_first_name(lexicon, words[0]) and not travel and words[0].lower() not in _US_STATE_NAMES:
            return False  # "call from Dennis", "report to Whitney": a person far more often than a town
        if kind == COMMON or kind == AMBIGUOUS or len(words[0]) < 4:
            lower = match is not None and _lower_line(match.string, match.start(), match.end())
            if travel and lower and kind == AMBIGUOUS and len(words[0]) >= 4:
                return True  # "son called from revere" in a lower-case note
            return words[0][0].isupper() and not caps and not words[0].isupper()
    return True


def _after_travel_verb(match: re.Match[str]) -> bool:
    """ "going home to quincy", "called from revere": a verb of going or calling before the cue makes it
    a place's cue, whatever the word also is; but a call goes *to* a person ("report called to Sandy")."""
    verb = _TRAVEL_BEFORE.search(match.string, max(0, match.start() - 24), match.start())
    if verb is None:
        return False
    return not (verb.group(1).lower().startswith("call") and match.group(0)[:2].lower() == "to")


def _common_first_name(lexicon: Lexicon, word: str) -> bool:
    """Among the most common first names: "Dennis" after "from" is a person more often than a town."""
    return lexicon.first.get(word.lower(), _COMMON_FIRST_NAMES) < _COMMON_FIRST_NAMES


_TRAVEL_BEFORE = re.compile(
    r"(?i)\b(in|home|back|return(?:s|ed|ing)?|drive|driving|drove|fly|flying|flew|came|coming|come|called|calls"
    r"|calling|moved|moving|lives|living|resides|relocated)(?:[ \t]+(?:in|up|down|over|back|home))?[ \t]+$"
)


_US_STATE_NAMES = frozenset(
    "alabama alaska arizona arkansas california colorado connecticut delaware florida georgia hawaii idaho"
    " illinois indiana iowa kansas kentucky louisiana maine maryland massachusetts michigan minnesota"
    " mississippi missouri montana nebraska nevada ohio oklahoma oregon pennsylvania tennessee texas utah"
    " vermont virginia washington wisconsin wyoming".split()
)
# First-name frequency rank below which a one-word town after "from" is read as a person.
_COMMON_FIRST_NAMES = 1500


@register("patient_title")
def patient_title(text: str, match: re.Match[str] | None = None) -> bool:
    """``person_strong`` after "Mr."/"Mrs."/"Ms.", except a capitals "MR" in a mixed-case line (mitral regurgitation)."""
    if match is not None:
        title = match.group(0)[: match.start(1) - match.start(0)].strip().rstrip(".")
        if title.isupper() and not _caps_line(match.string, match.start(), match.end()):
            return False
    return person_strong(text, match)


_REFERENCE_CUE = re.compile(
    r"(?i:\b(?:ref(?:erence)?|auth(?:orization)?|order|acct|account|claim|room|rm|bed|lot|case|ticket|"
    r"id|mrn|unit|invoice|confirmation|conf|tracking|policy|member|group|rx)\b[^\n]{0,6})$"
)


@register("pager_context")
def pager_context(text: str, match: re.Match[str] | None = None) -> bool:
    """A five-digit pager, unless the "#" follows a reference, order, room or account cue ("ref # 88812")."""
    if match is None:
        return True
    return _no_cue_before(_REFERENCE_CUE, match, 24)


# State codes that are also credentials or English words after a comma ("Hutchins, PA", "Lee, MD").
_STATE_LOOKALIKES = frozenset({"MD", "PA", "IN", "OR", "ME", "OK", "HI", "DO"})


@register("state_after_place")
def state_after_place(text: str, match: re.Match[str] | None = None) -> bool:
    """A state name or code after a comma, when the words before the comma are a lexicon place."""
    if match is None or match.lastindex is None or match.lastindex < 2:
        return False
    return match.group(2) not in _STATE_LOOKALIKES and _after_lexicon_place(match)


def _after_lexicon_place(match: re.Match[str]) -> bool:
    """Are the words before the comma (group 1), or the last of them, a lexicon place?"""
    from deid_core.engine.lexicons import load_lexicon

    lexicon = load_lexicon("en")
    place = match.group(1)
    words = place.split()
    candidates = [place] + ([words[-1]] if len(words) > 1 else [])
    return any(lexicon.is_place(c) and c.lower() not in lexicon.stop for c in candidates)


# State codes that are also words or credentials: "Bangor, ME", "Indianapolis, IN" but "Smith, MD",
# "Jones, PA" (a physician assistant), "DR JACKSON, IN THE OR".
_CREDENTIAL_STATES = frozenset({"MD", "PA", "MS"})


@register("state_code_after_place")
def state_code_after_place(text: str, match: re.Match[str] | None = None) -> bool:
    """A state code that is also a word or credential, after a comma and a lexicon place.

    As ``state_after_place``, in a line not written in capitals (where "IN", "ME", "OR" are
    words); a code that is also a credential (MD, PA, MS) only after a place that is no
    name or English word ("Biloxi, MS", not "Jackson, MS" or "cc: Price, PA").
    """
    if match is None or match.lastindex is None or match.lastindex < 2:
        return False
    if not _after_lexicon_place(match) or _caps_line(match.string, match.start(), match.end()):
        return False
    if match.group(2) in _CREDENTIAL_STATES:
        from deid_core.engine.lexicons import UNKNOWN, load_lexicon

        return load_lexicon("en").classify(match.group(1).split()[-1]) == UNKNOWN
    return True


@register("street_words")
def street_words(text: str, match: re.Match[str] | None = None) -> bool:
    """A street address whose name words are not clinical or stop words ("12 Main St", not "5 Units Ct")."""
    from deid_core.engine.lexicons import STOP, load_lexicon

    lexicon = load_lexicon("en")
    words = _NAME_WORD.findall(text)[:-1]
    return bool(words) and all(lexicon.classify(w) != STOP for w in words)


_DIRECTIONS = frozenset("n s e w ne nw se sw north south east west".split())


@register("street_words_direction")
def street_words_direction(text: str, match: re.Match[str] | None = None) -> bool:
    """ "4417 n pearl st": ``street_words`` on the street's name, the compass direction and the unit left out."""
    name = re.split(r"(?i),?[ \t]+(?:apt|unit|ste|suite|#)\b", text)[0]
    return street_words(" ".join(w for w in _NAME_WORD.findall(name) if w.lower() not in _DIRECTIONS), match)


_LEADING_INITIALS = re.compile(r"^[A-Za-z]{1,2}\.?[ \t]+(?=\S)")


@register("signature_name")
def signature_name(text: str, match: re.Match[str] | None = None) -> bool:
    """A signature's name, maybe after initials ("ab kowalczyk", "J. Osei"): the name read as after a kinship word."""
    return person_kin(_LEADING_INITIALS.sub("", text), match)


@register("institution_word")
def institution_word(text: str, match: re.Match[str] | None = None) -> bool:
    """One capitalised word before a clinician's role ("Joslin fellow"): a surname or a word in no list.

    An English word ("Night fellow", "Stroke team") names a service or a shift,
    and a common first name is more often the clinician ("Maria resident") than a hospital.
    """
    from deid_core.engine.lexicons import NAME, UNKNOWN, load_lexicon

    lexicon = load_lexicon("en")
    words = _NAME_WORD.findall(text)
    if len(words) != 1:
        return False
    if match is not None and _CAPITALISED_WORD_BEFORE.search(match.string, max(0, match.start() - 32), match.start()):
        return False  # "Palliative care (George Molina NP)": a surname after a first name is the clinician
    return lexicon.classify(words[0]) in (NAME, UNKNOWN) and not _common_first_name(lexicon, words[0])


_CAPITALISED_WORD_BEFORE = re.compile(r"\b[A-Z][a-z]+\.?[ \t]+$")


@register("street_words_lower")
def street_words_lower(text: str, match: re.Match[str] | None = None) -> bool:
    """A lower-case street address ("22 linden terrace") only in a lower-case line, with no stop word in its name."""
    if match is None or not _lower_line(match.string, match.start(), match.end()):
        return False
    return street_words(text, match)


# Role and service abbreviations that a dash or a credential line may hold as an item, not a signature.
_NOT_INITIALS = frozenset(
    "pt ot st sw cm rn md np pa rt do slp rrt lpn cna msw no ok na nc iv po pr im sq ng og er ed or icu ccu".split()
)


@register("initials_signature")
def initials_signature(text: str, match: re.Match[str] | None = None) -> bool:
    """Initials alone as a signature ("-ep", "-- bp/ot", "s.l. rn").

    Never a role or service abbreviation ("- PT" in a list of consults); a
    stop word ("bp", "hr") or capitals ("- EGD") only when a credential follows
    ("bp/ot", "JK/RN"), which makes the line a signature.
    """
    from deid_core.engine.lexicons import STOP, load_lexicon

    letters = text.replace(".", "").lower()
    if letters in _NOT_INITIALS and "." not in text:
        return False
    if match is not None and match.string[match.end(1) : match.end()].strip():
        return True  # the rule's pattern allows only a credential after the initials
    if text.isupper():  # "- EGD", "- CXR": a bullet of capitals is an item
        return False
    return "." in text or load_lexicon("en").classify(letters) != STOP


@register("patient_last_first")
def patient_last_first(text: str, match: re.Match[str] | None = None) -> bool:
    """ "Dembele, Aminata" after a patient cue: the second word a lexicon first name or a word in no list.

    The cue ("pt", "Patient:") says a name follows, so a given name the lexicons
    lack counts; a common word does not ("pt Smith, tired").
    """
    from deid_core.engine.lexicons import NAME, UNKNOWN, load_lexicon

    words = _NAME_WORD.findall(text)
    if len(words) < 2:
        return False
    lexicon = load_lexicon("en")
    if words[1].lower() not in lexicon.first and lexicon.classify(words[1]) not in (NAME, UNKNOWN):
        return False
    return _name_words(text, match, strong=False, unknown_without_case=True)


@register("patient_line_name")
def patient_line_name(text: str, match: re.Match[str] | None = None) -> bool:
    """A surname (or "Surname, Given") that opens a line before an age and sex ("pettibone, 71m").

    The age and sex after it are the cue, as strong as "pt" before: so a
    "Surname, Given" pair is judged as after a patient cue, and one word as a
    relative's name after a kinship word (in a capitals or lower-case line a
    word in no list counts).
    """
    if len(_NAME_WORD.findall(text)) >= 2:
        return patient_last_first(text, match)
    return _name_words(text, match, strong=False, unknown_without_case=True)


@register("person_last_first")
def person_last_first(text: str, match: re.Match[str] | None = None) -> bool:
    """ "Kelly, Kathleen": both words weak-cue names, and the second a lexicon first name."""
    from deid_core.engine.lexicons import load_lexicon

    words = _NAME_WORD.findall(text)
    if len(words) < 2 or words[1].lower() not in load_lexicon("en").first:
        return False
    return _name_words(text, match, strong=False)


# --- session 22: names with no cue word, read from their sentence context -------------------
_PAIR_GLUE = frozenset({"and", "&"})


def _context_name_word(word: str, lexicon: Lexicon, *, caseless: bool, ambiguous: bool) -> bool:
    """One word of a name that no cue word introduces: a double-barrelled name ("vasquez-lord",
    "Sandoval-Pike") when no part is a stop or common word; else a lexicon name or a word in no
    list (and, when ``ambiguous``, a name that is also a word), three letters or more, not a
    lexicon place that is no name ("chicopee"); in a mixed-case line it must be capitalised."""
    from deid_core.engine.lexicons import AMBIGUOUS, COMMON, NAME, STOP, UNKNOWN

    if not caseless and not _CAPITALISED.match(word):
        return False
    parts = [p for p in re.split(r"[-'’]", word) if p]
    if "-" in word and len(parts) == 2:
        return all(len(p) >= 2 and lexicon.classify(p) not in (STOP, COMMON) for p in parts)
    if len(word) < 3:
        return False
    kind = lexicon.classify(word)
    if kind == UNKNOWN and lexicon.is_place(word):
        return False
    return kind in ((NAME, UNKNOWN, AMBIGUOUS) if ambiguous else (NAME, UNKNOWN))


def _context_names(match: re.Match[str] | None, words: list[str], *, ambiguous: bool = False) -> bool:
    from deid_core.engine.lexicons import load_lexicon

    if match is None or not words:
        return False
    lexicon = load_lexicon("en")
    caseless = _caseless_line(match.string, match.start(), match.end())
    return all(_context_name_word(w, lexicon, caseless=caseless, ambiguous=ambiguous) for w in words)


@register("person_in_context")
def person_in_context(text: str, match: re.Match[str] | None = None) -> bool:
    """A name with no cue word, told by its place in the sentence ("krysia asking about trach",
    "Halvdan wants another week", "d/w eidsness", "(8/14, greenawalt)", "kinley (4 yo)").

    Every word must be a lexicon name, a word in no list (three letters or more) or a
    double-barrelled name whose parts are neither stop nor common words; never an ambiguous,
    common or stop word, and never a place in no name list. In a mixed-case line each must be
    capitalised; in a capitals or lower-case line case says nothing.
    """
    return _context_names(match, _NAME_WORD.findall(text))


@register("surname_in_context")
def surname_in_context(text: str, match: re.Match[str] | None = None) -> bool:
    """A surname alone where a diagnosis or a verb may stand as well ("CABG 9/17, Ferreira-Walsh";
    not "admitted 11/28, diuresed"): ``person_in_context``, and each word a lexicon name that is no
    lexicon place, or a double-barrelled name; a word in no list is not enough."""
    from deid_core.engine.lexicons import NAME, load_lexicon

    if not person_in_context(text, match):
        return False
    lexicon = load_lexicon("en")
    return all(
        "-" in w or (lexicon.classify(w) == NAME and not lexicon.is_place(w)) for w in _NAME_WORD.findall(text)
    )


@register("person_pair_in_context")
def person_pair_in_context(text: str, match: re.Match[str] | None = None) -> bool:
    """``person_in_context`` over every name of the whole match, so that the first of a pair
    ("tadek and basia want", the rule's group the second) is judged as well."""
    if match is None:
        return False
    words = [w for w in _NAME_WORD.findall(match.group(0)) if w.lower() not in _PAIR_GLUE]
    return _context_names(match, words)


# A list of visitors: its cue, then names (quoted or not, each maybe with a note in
# parentheses: "halszka (hcp)") joined by commas, "and" or "&".
_LIST_ITEM = re.compile(
    r"""(?i)(?:family|social|soc|visitors?|visited[ \t]+by|at[ \t]+(?:bs|bedside)(?:[ \t]+[a-z]+){0,2})[ \t]*:[ \t]*"""
    r"""((?:["“]?[^\W\d_][\w'’-]*["”]?(?:[ \t]*\([^)\n]{1,20}\))?[ \t]*(?:,[ \t]*(?:and[ \t]+)?|&[ \t]*|and[ \t]+))*)$"""
)


_LIST_GOES_ON = re.compile(r"[ \t]*(?:,|&|\+|(?i:and)\b)[ \t]*[^\W\d_]")
# The pieces of a list: a quoted nickname, a note in parentheses, or a word.
_LIST_TOKEN = re.compile(r"""["“][^"”\n]*["”]|\([^)\n]*\)|[^\W\d_][\w'’-]*""")


@register("person_possessive_phone")
def person_possessive_phone(text: str, match: re.Match[str] | None = None) -> bool:
    """A name before "'s cell" or "'s number" ("carmen's cell", "CRYSTAL'S CELL"): ``person_in_context``,
    and a name that is also a word counts too, since a phone of one's own says a person."""
    return _context_names(match, _NAME_WORD.findall(text), ambiguous=True)


@register("person_listed")
def person_listed(text: str, match: re.Match[str] | None = None) -> bool:
    """A name in a list of visitors after "family:", "social:", "visitors:" or "at bedside all afternoon:"
    ("Family: Aslaug, Halvdan, Gunnhild", "family: halszka (hcp) and mietek in 1000").

    The list must run from its cue to the word with nothing but names between (so "family: wife
    and son" and "family: aware, updated" give none); each word (the listed ones before it
    included, quoted nicknames excepted) is a name as ``person_in_context`` reads one, except
    that a name that is also a word ("marlin") counts too after so plain a cue.
    """
    if match is None:
        return False
    start = match.start(match.lastindex or 0)
    line_start = match.string.rfind("\n", 0, start) + 1
    head = _LIST_ITEM.search(match.string, line_start, start)
    if head is None:
        return False
    # "Social:" opens a list of people only as a list ("Social: Joy and Nadege here"); one word
    # after it is as often what the patient does ("social: works on a paving crew").
    if head.group(0)[:3].lower() == "soc" and not head.group(1).strip() and not _LIST_GOES_ON.match(
        match.string, match.end()
    ):
        return False
    items = [w for w in _LIST_TOKEN.findall(head.group(1))
             if not w.startswith(("(", '"', "“")) and w.lower() not in _PAIR_GLUE]
    return _context_names(match, [*items, *_NAME_WORD.findall(text)], ambiguous=True)
