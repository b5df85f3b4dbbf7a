"""Subscription regexes (KIP-848 `SubscribedTopicRegex`), matched in linear time.

Kafka compiles them with RE2J (`Pattern.compile(regex)`) and keeps the topics whose whole name
matches (`matcher(topic).matches()`). RE2's point is that matching never backtracks: a client's
pattern cannot make the coordinator spin. Python's `re` backtracks (`(a+)+b` against a long topic
name takes exponential time), so here the pattern is parsed with Python's own regex parser and then
run as a Thompson NFA (a Pike VM without captures): time is O(len(topic) x len(pattern)).

Syntax: what Python's parser accepts, minus what RE2 refuses too (backreferences, lookaround,
conditionals, atomic groups, possessive quantifiers); `\\d \\w \\s \\b` are ASCII as in RE2. RE2-only
syntax (`\\Q...\\E`, `[[:alpha:]]`, `\\pN`) is not accepted, and error descriptions are Python's, not
RE2J's. Topic names are ASCII `[a-zA-Z0-9._-]`, so the remaining differences do not matter.
"""

from __future__ import annotations

from collections.abc import Callable

try:  # Python 3.11+
    from re import _constants as C  # type: ignore[attr-defined]  # private, absent from typeshed
    from re import _parser as sre_parse  # type: ignore[attr-defined]  # private, absent from typeshed
except ImportError:  # pragma: no cover
    import sre_constants as C
    import sre_parse

MAX_PROGRAM = 5000  # instructions; RE2 also bounds the size of a compiled program
MAX_REPEAT = 1000  # RE2's limit on {n,m}
DFA_CACHE_MAX = 10_000  # cached steps per compiled regex (RE2 bounds its DFA cache too)


class RegexError(ValueError):
    def __init__(self, description: str):
        super().__init__(description)
        self.description = description


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_DIGIT = frozenset("0123456789")
_SPACE = frozenset("\t\n\f\r ")
_CATEGORIES = {
    C.CATEGORY_DIGIT: lambda ch: ch in _DIGIT,
    C.CATEGORY_NOT_DIGIT: lambda ch: ch not in _DIGIT,
    C.CATEGORY_SPACE: lambda ch: ch in _SPACE,
    C.CATEGORY_NOT_SPACE: lambda ch: ch not in _SPACE,
    C.CATEGORY_WORD: lambda ch: ch in _WORD,
    C.CATEGORY_NOT_WORD: lambda ch: ch not in _WORD,
}

# instructions: ("char", predicate) ("split", a, b) ("jmp", a) ("assert", kind) ("match",)


class _Compiler:
    def __init__(self):
        self.prog: list[list] = []

    def emit(self, *ins) -> int:
        if len(self.prog) >= MAX_PROGRAM:
            raise RegexError("expression too large")
        self.prog.append(list(ins))
        return len(self.prog) - 1

    def seq(self, items, icase: bool, dotall: bool) -> None:
        for op, av in items:
            self.node(op, av, icase, dotall)

    def node(self, op, av, icase: bool, dotall: bool) -> None:
        if op is C.LITERAL:
            c = chr(av)
            self.emit("char", (lambda ch, c=c.lower(): ch.lower() == c) if icase else (lambda ch, c=c: ch == c))  # noqa: B008 (bound once, on purpose)
        elif op is C.NOT_LITERAL:
            c = chr(av)
            self.emit("char", (lambda ch, c=c.lower(): ch.lower() != c) if icase else (lambda ch, c=c: ch != c))  # noqa: B008 (bound once, on purpose)
        elif op is C.ANY:
            self.emit("char", (lambda ch: True) if dotall else (lambda ch: ch != "\n"))
        elif op is C.IN:
            self.emit("char", _class(av, icase))
        elif op is C.SUBPATTERN:
            _group, add, remove, sub = av
            icase2 = (icase or bool(add & C.SRE_FLAG_IGNORECASE)) and not remove & C.SRE_FLAG_IGNORECASE
            dotall2 = (dotall or bool(add & C.SRE_FLAG_DOTALL)) and not remove & C.SRE_FLAG_DOTALL
            self.seq(sub, icase2, dotall2)
        elif op is C.BRANCH:
            _, alternatives = av
            jumps = []
            for i, alt in enumerate(alternatives):
                if i < len(alternatives) - 1:
                    split = self.emit("split", None, None)
                    self.prog[split][1] = len(self.prog)
                    self.seq(alt, icase, dotall)
                    jumps.append(self.emit("jmp", None))
                    self.prog[split][2] = len(self.prog)
                else:
                    self.seq(alt, icase, dotall)
            for j in jumps:
                self.prog[j][1] = len(self.prog)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            unbounded = hi == C.MAXREPEAT
            if lo > MAX_REPEAT or (not unbounded and hi > MAX_REPEAT):
                raise RegexError(f"bad repetition operator: repeat count exceeds {MAX_REPEAT}")
            for _ in range(lo):
                self.seq(sub, icase, dotall)
            if unbounded:
                split = self.emit("split", None, None)
                self.prog[split][1] = len(self.prog)
                self.seq(sub, icase, dotall)
                self.emit("jmp", split)
                self.prog[split][2] = len(self.prog)
            else:
                splits = []
                for _ in range(hi - lo):
                    split = self.emit("split", None, None)
                    self.prog[split][1] = len(self.prog)
                    splits.append(split)
                    self.seq(sub, icase, dotall)
                for s in splits:
                    self.prog[s][2] = len(self.prog)
        elif op is C.AT:
            self.emit("assert", av)
        else:
            raise RegexError(f"unsupported construct ({str(op).lower()}) in a subscription regex")


def _class(items, icase: bool):
    negate = False
    tests: list[Callable[..., bool]] = []
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            tests.append(lambda ch, c=chr(av): ch == c)  # noqa: B008 (bound once, on purpose)
        elif op is C.RANGE:
            tests.append(lambda ch, lo=av[0], hi=av[1]: lo <= ord(ch) <= hi)
        elif op is C.CATEGORY:
            if av not in _CATEGORIES:
                raise RegexError(f"unsupported character class {av}")
            tests.append(_CATEGORIES[av])
        else:
            raise RegexError(f"unsupported construct ({str(op).lower()}) in a character class")

    def member(ch: str) -> bool:
        if icase:
            hit = any(t(ch) or t(ch.lower()) or t(ch.upper()) for t in tests)
        else:
            hit = any(t(ch) for t in tests)
        return hit != negate

    return member


class CompiledRegex:
    def __init__(self, pattern: str, prog: list):
        self.pattern = pattern
        self.prog = prog
        # The lazy DFA: sets of NFA states by id, and steps (state id, char, next is a word char /
        # None at the end) -> (state id, matched).
        self._steps: dict = {}
        self._ids: dict[tuple, int] = {}
        self._sets: list[tuple] = []

    def _state_id(self, chars: list[int]) -> int:
        key = tuple(chars)
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = len(self._sets)
            self._sets.append(key)
        return sid

    def _assert(self, kind, text: str, pos: int) -> bool:
        if kind in (C.AT_BEGINNING, C.AT_BEGINNING_STRING, C.AT_BEGINNING_LINE):
            return pos == 0
        if kind in (C.AT_END, C.AT_END_STRING, C.AT_END_LINE):
            return pos == len(text)
        before = pos > 0 and text[pos - 1] in _WORD
        after = pos < len(text) and text[pos] in _WORD
        if kind is C.AT_BOUNDARY:
            return before != after
        if kind is C.AT_NON_BOUNDARY:
            return before == after
        return False

    def _closure(self, pcs: list[int], text: str, pos: int) -> tuple[list[int], bool]:
        prog = self.prog
        seen: set[int] = set()
        chars: list[int] = []
        matched = False
        stack = list(reversed(pcs))
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            ins = prog[pc]
            kind = ins[0]
            if kind == "char":
                chars.append(pc)
            elif kind == "split":
                stack.append(ins[2])
                stack.append(ins[1])
            elif kind == "jmp":
                stack.append(ins[1])
            elif kind == "assert":
                if self._assert(ins[1], text, pos):
                    stack.append(pc + 1)
            elif kind == "match":
                matched = True
        return chars, matched

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of `text` matches (Java's Matcher.matches).

        A step from one set of NFA states to the next depends only on the set, the character
        consumed and, through the assertions of the closure, on whether the next character is a word
        character or the text ends there; so steps are cached under that key (a lazy DFA, as RE2
        runs one). A long text of few distinct characters then costs one dictionary lookup per
        character; the cache is dropped when it grows past `DFA_CACHE_MAX` entries, after which
        matching is the plain NFA simulation, O(len(text) x len(program))."""
        chars, matched = self._closure([0], text, 0)
        cache = self._steps
        if len(cache) >= DFA_CACHE_MAX:
            cache.clear()
            self._ids.clear()
            self._sets.clear()
        state = self._state_id(chars)
        last = len(text) - 1
        for pos, ch in enumerate(text):
            key = (state, ch, None if pos == last else text[pos + 1] in _WORD)
            step = cache.get(key)
            if step is None:
                current = self._sets[state]
                if not current:
                    return False
                nxt = [pc + 1 for pc in current if self.prog[pc][1](ch)]
                chars, ok = self._closure(nxt, text, pos + 1)
                step = cache[key] = (self._state_id(chars), ok)
            state, matched = step
        return matched
        return matched


def compile_regex(pattern: str) -> CompiledRegex:
    """Parses `pattern`; raises RegexError(description) if it is not a valid subscription regex."""
    try:
        parsed = sre_parse.parse(pattern, 0)
    except (C.error, RecursionError, OverflowError) as e:
        raise RegexError(str(e.msg) if hasattr(e, "msg") else str(e)) from None
    flags = parsed.state.flags
    if flags & C.SRE_FLAG_VERBOSE:
        raise RegexError("verbose mode is not supported")
    comp = _Compiler()
    comp.seq(parsed, bool(flags & C.SRE_FLAG_IGNORECASE), bool(flags & C.SRE_FLAG_DOTALL))
    comp.emit("match")
    return CompiledRegex(pattern, comp.prog)
