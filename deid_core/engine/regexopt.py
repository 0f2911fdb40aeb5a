"""Compile rule regexes so that long case-insensitive alternations branch on their first character.

Python's ``re`` rules out an alternative of ``a|b|c`` with one character
comparison when it starts with a plain literal, but not when the literal is
case-insensitive: then every alternative is entered and left again in turn.
The name rules' stop-word lookahead (fragment ``NS``, which holds the kinship
words ``KIN``: about 200 case-insensitive alternatives) runs at every word a
name rule tries, and was most of the English rule layer's time.

``compile_pattern`` parses the pattern with ``re``'s own parser and, inside
every case-insensitive alternation of at least ``MIN_ALTERNATIVES``, factors
the alternatives that start with the same ASCII character
(``(?i:son|wife|sister)`` is compiled as ``(?i:s(?:on|ister)|wife)``), then
generates the code from that tree as ``re.compile`` does. The result is the
same regex: the pattern string, flags and groups are those of ``re.compile``,
and so is every match (span and groups), because backtracking tries the
alternatives that can match in the original order:

* alternatives are factored only within runs of alternatives that start with
  an ASCII literal; an alternative that starts otherwise (a class, a group)
  stays where it is and ends the run (a lone ``(?:a|b)`` alternative is first
  spliced into the alternation, which is the same alternation);
* two ASCII characters never match the same character case-insensitively
  (``s`` matches ``s``, ``S`` and ``ſ``; ``k`` also ``K``, Kelvin; ``i`` also
  ``İ`` and ``ı``), so alternatives in different groups cannot both match at
  one position, and within a group their order is kept;
* "S" and "s" are one test when the case is ignored, so the group's first
  member's literal serves every member.

Only the number of alternatives entered to find that out changes.

Second, a look-around that tests more than one character and is followed by an
item whose first character is one test (``{{NS}}{{CW}}``: the stop-word
lookahead, then a capital) gets that one-character test as a lookahead in
front (``_guard``): the item starts at the same position and must match it
anyway, so the matches are the same, and a lower-case word fails before the
stop-word list runs. Lookbehinds are left alone.

Anything unexpected (a Python whose ``re`` internals differ) falls back to
``re.compile``.
"""

from __future__ import annotations

import re
from typing import Any

try:  # Python 3.11+
    from re import _compiler as _k
    from re import _constants as _c
    from re import _parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_compile as _k  # type: ignore[no-redef]
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

import _sre

_IGNORECASE = re.IGNORECASE
_REPEATS = tuple(
    op for op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)) if op is not None
)
_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)
MIN_ALTERNATIVES = 4  # shorter alternations are left as they are


def _key(alternative: Any) -> int | None:
    """The ASCII character an alternative starts with (lower case), if it starts with a literal."""
    if not alternative.data:
        return None
    op, av = alternative.data[0]
    if op is _c.LITERAL and av < 128:
        return ord(chr(av).lower())
    return None


def _flatten(alternatives: list[Any]) -> list[Any]:
    """Splice ``(?:a|b)`` standing alone as an alternative into the alternation (same order)."""
    out: list[Any] = []
    for alternative in alternatives:
        if len(alternative.data) == 1 and alternative.data[0][0] is _c.SUBPATTERN:
            group, add, remove, sub = alternative.data[0][1]
            if group is None and not add and not remove and len(sub.data) == 1 and sub.data[0][0] is _c.BRANCH:
                out.extend(_flatten(list(sub.data[0][1][1])))
                continue
        out.append(alternative)
    return out


def _regroup(alternatives: list[Any], state: Any) -> list[Any]:
    alternatives = _flatten(alternatives)
    out: list[Any] = []
    i = 0
    while i < len(alternatives):
        if _key(alternatives[i]) is None:
            out.append(alternatives[i])
            i += 1
            continue
        groups: dict[int, list[Any]] = {}
        while i < len(alternatives) and (key := _key(alternatives[i])) is not None:
            groups.setdefault(key, []).append(alternatives[i])
            i += 1
        for members in groups.values():
            if len(members) == 1:
                out.append(members[0])
                continue
            # Case-insensitive "s" and "S" are one test: the first member's literal serves all.
            head = members[0].data[0]
            rests = [_p.SubPattern(state, list(m.data[1:])) for m in members]
            out.append(_p.SubPattern(state, [head, (_c.BRANCH, (None, rests))]))
    return out


_ZERO_WIDTH = (_c.AT, _c.ASSERT, _c.ASSERT_NOT)
_ONE_CHAR = (_c.LITERAL, _c.NOT_LITERAL, _c.IN)


def _combine(flags: int, add: int, remove: int) -> int:
    """Flags inside a scoped group, as ``re`` combines them (a type flag replaces the others)."""
    if add & (re.ASCII | re.LOCALE | re.UNICODE):
        flags &= ~(re.ASCII | re.LOCALE | re.UNICODE)
    return (flags | add) & ~remove


def _first_char(op: Any, av: Any, flags: int) -> tuple[Any, int] | None:
    """The one-character item the first character of every match of ``(op, av)`` must match, and its flags."""
    while True:
        if op in _ONE_CHAR:
            return (op, av), flags
        if op is _c.SUBPATTERN and av[3].data:
            flags = _combine(flags, av[1], av[2])
            op, av = av[3].data[0]
        elif op in _REPEATS and av[0] >= 1 and av[2].data:
            op, av = av[2].data[0]
        else:
            return None


def _heavy(op: Any, av: Any) -> bool:
    """A look-around that tests more than one character."""
    if op is _c.AT:
        return False
    body = av[1].data
    return len(body) != 1 or body[0][0] not in _ONE_CHAR


def _guard(sub: Any, flags: int) -> None:
    """Put a one-character lookahead before look-arounds that test more, when the item after them
    starts with a one-character test: ``(?!(?i:by|with|...)\b)[A-Z]`` becomes
    ``(?=[A-Z])(?!(?i:by|with|...)\b)[A-Z]``. The item after the look-arounds starts at the same
    position and must match that character anyway, so the matches are the same; a position where
    it does not fails before the long look-around runs."""
    data = sub.data
    out: list[Any] = []
    i = 0
    while i < len(data):
        if data[i][0] not in _ZERO_WIDTH:
            out.append(data[i])
            i += 1
            continue
        j = i
        while j < len(data) and data[j][0] in _ZERO_WIDTH:
            j += 1
        run = data[i:j]
        if j < len(data) and any(_heavy(op, av) for op, av in run):
            first = _first_char(*data[j], flags)
            if first is not None:
                item, item_flags = first
                if item_flags != flags:
                    inner = _p.SubPattern(sub.state, [item])
                    item = (_c.SUBPATTERN, (None, item_flags & ~flags, flags & ~item_flags, inner))
                out.append((_c.ASSERT, (1, _p.SubPattern(sub.state, [item]))))
        out.extend(run)
        i = j
    if len(out) != len(data):
        data[:] = out


_LITERAL, _IN, _SUBPATTERN, _BRANCH = _c.LITERAL, _c.IN, _c.SUBPATTERN, _c.BRANCH
_LOOK = (_c.ASSERT, _c.ASSERT_NOT)
_GROUPREF_EXISTS = _c.GROUPREF_EXISTS


def _walk(sub: Any, flags: int, behind: bool = False) -> None:
    data = sub.data
    zero_width = False
    for index, (op, av) in enumerate(data):
        if op is _LITERAL or op is _IN:  # most items: nothing inside
            continue
        if op is _SUBPATTERN:
            _group, add, remove, inner = av
            _walk(inner, _combine(flags, add, remove), behind)
        elif op is _BRANCH:
            for alternative in av[1]:
                _walk(alternative, flags, behind)
            if flags & _IGNORECASE and not flags & re.LOCALE and len(av[1]) >= MIN_ALTERNATIVES:
                data[index] = (_BRANCH, (av[0], _regroup(list(av[1]), sub.state)))
        elif op in _LOOK:
            zero_width = True
            _walk(av[1], flags, behind or av[0] < 0)
        elif op in _REPEATS:
            _walk(av[2], flags, behind)
        elif op is _ATOMIC:
            _walk(av, flags, behind)
        elif op is _GROUPREF_EXISTS:
            _walk(av[1], flags, behind)
            if av[2] is not None:
                _walk(av[2], flags, behind)
    if zero_width and not behind:  # lookbehinds are left as they are
        _guard(sub, flags)


def compile_pattern(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(source, flags)`` with first-letter dispatch in case-insensitive alternations.

    Raises ``re.error`` exactly when ``re.compile`` does.
    """
    flags = int(flags)
    if not isinstance(source, str) or flags & (re.DEBUG | re.LOCALE):
        return re.compile(source, flags)
    try:
        tree = _p.parse(source, flags)
    except re.error:
        return re.compile(source, flags)  # raises the same error
    try:
        _walk(tree, tree.state.flags)
        code = _with_first_set(_k._code(tree, flags), tree, flags | tree.state.flags)
        groupindex = tree.state.groupdict
        indexgroup: list[str | None] = [None] * tree.state.groups
        for name, number in groupindex.items():
            indexgroup[number] = name
        return _sre.compile(
            source, flags | tree.state.flags, code, tree.state.groups - 1, groupindex, tuple(indexgroup)
        )
    except Exception:  # re internals of another Python version: the plain compile
        return re.compile(source, flags)


_ASCII = tuple(chr(c) for c in range(128))
_INFO_FLAGS = 2  # code[2]: the INFO block's flags (prefix, literal, charset)
#: Use a first-character set only when it rules out at least this many ASCII characters.
MIN_EXCLUDED = 16
_first_cache: dict[tuple[Any, int], frozenset[str]] = {}


def _item_first(op: Any, av: Any, flags: int) -> frozenset[str]:
    """The ASCII characters one single-character item (a literal or a class) matches,
    found by matching each ASCII character against the item compiled alone."""
    key = (repr((op, av)), flags)
    found = _first_cache.get(key)
    if found is None:
        state = _p.State()
        state.flags = flags
        sub = _p.SubPattern(state, [(op, av)])
        matcher = _sre.compile("", flags, _k._code(sub, flags), 0, {}, (None,)).match
        found = _first_cache[key] = frozenset(c for c in _ASCII if matcher(c))
    return found


def _first(items: Any, flags: int) -> tuple[frozenset[str], bool] | None:
    """ASCII characters that can be the first character of a match of ``items``, and
    whether ``items`` can match the empty string; None when that cannot be worked out.
    Non-ASCII first characters are not tracked: the set is used with every non-ASCII
    character added."""
    out: frozenset[str] = frozenset()
    for op, av in items:
        if op in _ZERO_WIDTH:  # consumes nothing: the character after it is the first
            continue
        if op in _ONE_CHAR:
            return out | _item_first(op, av, flags), False
        if op is _c.SUBPATTERN:
            found = _first(av[3].data, _combine(flags, av[1], av[2]))
        elif op is _c.BRANCH:
            chars: frozenset[str] = frozenset()
            empty = False
            for alternative in av[1]:
                sub = _first(alternative.data, flags)
                if sub is None:
                    return None
                chars |= sub[0]
                empty = empty or sub[1]
            found = chars, empty
        elif op in _REPEATS:
            found = _first(av[2].data, flags)
            if found is not None and av[0] == 0:
                found = found[0], True
        elif op is _ATOMIC:
            found = _first(av.data, flags)
        else:  # any character, a group reference, ...
            return None
        if found is None:
            return None
        out |= found[0]
        if not found[1]:
            return out, False
    return out, True


def _with_first_set(code: list[int], tree: Any, flags: int) -> list[int]:
    """``code`` with a first-character set in its INFO block when ``re`` found no literal
    prefix or character set of its own (a pattern that starts with a look-around or an
    optional group): ``search`` then skips, in C, every position whose character cannot
    start a match, instead of running the pattern there. Every match is non-empty and
    starts with a character of the set (look-arounds consume nothing), so the matches are
    the same; non-ASCII characters are always in the set."""
    if code[0] != _c.INFO or code[_INFO_FLAGS] != 0 or flags & re.LOCALE:
        return code
    lo, hi = tree.getwidth()
    if lo == 0:
        return code
    found = _first(tree.data, flags)
    if found is None or found[1] or 128 - len(found[0]) < MIN_EXCLUDED:
        return code
    info = [_c.INFO, 0, _c.SRE_INFO_CHARSET, min(lo, _k.MAXCODE), min(hi, _k.MAXCODE), *_charset_code(found[0])]
    info[1] = len(info) - 1
    return info + code[code[1] + 1 :]


_charset_codes: dict[frozenset[str], list[int]] = {}


def _charset_code(chars: frozenset[str]) -> list[int]:
    """Code of a character set: ``chars`` (ASCII) and every non-ASCII character."""
    code = _charset_codes.get(chars)
    if code is None:
        items: list[Any] = [(_c.LITERAL, ord(c)) for c in sorted(chars)]
        items.append((_c.RANGE, (128, 255)))  # a 256-bit map, then one range for the rest
        charset, _ = _k._optimize_charset(items)
        charset.append((_c.RANGE, (256, 0x10FFFF)))
        code = _charset_codes[chars] = []
        _k._compile_charset(charset, 0, code)
    return code


def _prefixes(items: Any, limit: int) -> tuple[set[str], bool]:
    """Lower-case ASCII strings one of which starts every match of ``items``, and whether
    they are whole (every match of ``items`` is exactly one of them)."""
    prefixes = {""}
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        if op is _c.LITERAL:
            if av >= 128:
                return prefixes, False
            char = chr(av).lower()
            prefixes = {p + char for p in prefixes}
            continue
        if op is _c.SUBPATTERN:
            sub, whole = _prefixes(av[3], limit)
        elif op is _c.BRANCH:
            sub, whole = set(), True
            for alternative in av[1]:
                found, complete = _prefixes(alternative, limit)
                sub |= found
                whole = whole and complete
        elif op in _REPEATS and av[0] >= 1:
            sub, whole = _prefixes(av[2], limit)
            whole = whole and av[0] == av[1] == 1
        else:
            return prefixes, False
        combined = {p + s for p in prefixes for s in sub}
        if len(combined) > limit:
            return prefixes, False
        prefixes = combined
        if not whole:
            return prefixes, False
    return prefixes, True


def literal_prefixes(pattern: re.Pattern[str], limit: int = 256) -> tuple[str, ...] | None:
    """Lower-case ASCII strings such that every match of ``pattern`` starts with one of them
    (its text lower-cased), or None when some match may start otherwise or ``re`` already
    skips ahead to a literal prefix or first-character set of its own.

    Read on the lower-cased text, they hold for a case-insensitive pattern too, except
    where the text has ``ı`` or ``ſ`` (they match "i" and "s" but lower-case to themselves)
    or a character whose lower case is longer (``İ``): ``ODD_CASE`` lists the first two.
    """
    if not isinstance(pattern.pattern, str) or pattern.flags & re.LOCALE:
        return None
    try:
        tree = _p.parse(pattern.pattern, pattern.flags)
        prefix, _, _ = _k._get_literal_prefix(tree, pattern.flags)
        if prefix or _k._get_charset_prefix(tree, pattern.flags) is not None:
            return None
        found, _ = _prefixes(tree, limit)
    except Exception:
        return None
    if not found or "" in found:
        return None
    return tuple(sorted(found))


#: Non-ASCII characters that match an ASCII letter case-insensitively but lower-case to themselves.
ODD_CASE = ("\u0131", "\u017f")
