"""A small FileCheck: match IR text against ``CHECK`` lines, as LLVM's FileCheck does.

    check(output_text, '''
        // CHECK: %y = tensor.rsqrt %x
        // CHECK-NEXT: return
        // CHECK-NOT: tensor.div
    ''')

Directives (anything before the directive on a line, such as ``//``, is ignored):

- ``CHECK: pat``       the pattern occurs at or after the end of the previous match;
- ``CHECK-NEXT: pat``  the pattern occurs on the line right after the previous match's line;
- ``CHECK-SAME: pat``  the pattern occurs on the previous match's line, after that match;
- ``CHECK-NOT: pat``   the pattern does not occur between the previous match and the next
  positive match (or the end of the output).

Patterns are plain substrings; ``{{regex}}`` embeds a regular expression. Leading and trailing
blanks of a pattern are ignored. A failure raises AssertionError showing the directive, where
the search started and the output around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECTIVE = re.compile(r"\bCHECK(-NEXT|-SAME|-NOT)?:(.*)$")


@dataclass(frozen=True)
class Directive:
    """One CHECK line: its kind (CHECK, CHECK-NEXT, ...), pattern text and line number."""

    kind: str
    pattern: str
    regex: re.Pattern
    line: int


def _compile(pattern: str) -> re.Pattern:
    parts, pos = [], 0
    for m in re.finditer(r"\{\{(.*?)\}\}", pattern):
        parts.append(re.escape(pattern[pos : m.start()]))
        parts.append(f"(?:{m.group(1)})")
        pos = m.end()
    parts.append(re.escape(pattern[pos:]))
    return re.compile("".join(parts))


def parse_directives(check_text: str) -> list[Directive]:
    """The CHECK directives of ``check_text``, in order."""
    out = []
    for i, line in enumerate(check_text.splitlines(), 1):
        m = _DIRECTIVE.search(line)
        if m is None:
            continue
        kind = "CHECK" + (m.group(1) or "")
        pattern = m.group(2).strip()
        if not pattern:
            raise ValueError(f"check line {i}: {kind} has an empty pattern")
        try:
            regex = _compile(pattern)
        except re.error as e:
            raise ValueError(f"check line {i}: bad regex in {pattern!r}: {e}") from None
        out.append(Directive(kind, pattern, regex, i))
    if not out:
        raise ValueError("no CHECK directives found")
    if out[0].kind in ("CHECK-NEXT", "CHECK-SAME"):
        raise ValueError(f"check line {out[0].line}: {out[0].kind} cannot be the first directive")
    return out


def _context(lines: list[str], at: int, radius: int = 3) -> str:
    lo, hi = max(0, at - radius), min(len(lines), at + radius + 1)
    shown = []
    for k in range(lo, hi):
        mark = ">>" if k == at else "  "
        shown.append(f"{mark} {k + 1:4d} | {lines[k]}")
    return "\n".join(shown) if shown else "   (empty output)"


def _fail(d: Directive, why: str, lines: list[str], at: int) -> AssertionError:
    return AssertionError(
        f"check line {d.line}: {d.kind}: {d.pattern!r} {why} "
        f"(search started at output line {min(at, len(lines) - 1) + 1 if lines else 0})\n"
        f"{_context(lines, min(at, max(len(lines) - 1, 0)))}\n--- full output ---\n" + "\n".join(lines)
    )


def check(output_text: str, check_text: str) -> None:
    """Assert that ``output_text`` satisfies the CHECK directives in ``check_text``."""
    lines = output_text.splitlines()
    directives = parse_directives(check_text)
    line, col = 0, 0  # end of the previous match
    pending_not: list[Directive] = []

    def check_nots(end_line: int, end_col: int) -> None:
        for d in pending_not:
            for k in range(line, min(end_line, len(lines) - 1) + 1):
                text = lines[k]
                lo = col if k == line else 0
                hi = end_col if k == end_line else len(text)
                m = d.regex.search(text, lo, hi)
                if m:
                    raise _fail(d, f"matched at output line {k + 1} but must not", lines, k)
        pending_not.clear()

    for d in directives:
        if d.kind == "CHECK-NOT":
            pending_not.append(d)
            continue
        if d.kind == "CHECK":
            found = None
            for k in range(line, len(lines)):
                m = d.regex.search(lines[k], col if k == line else 0)
                if m:
                    found = (k, m)
                    break
            if found is None:
                raise _fail(d, "not found", lines, line)
        elif d.kind == "CHECK-NEXT":
            k = line + 1
            m = d.regex.search(lines[k]) if k < len(lines) else None
            if m is None:
                raise _fail(d, f"not found on the next line ({k + 1})", lines, k)
            found = (k, m)
        else:  # CHECK-SAME
            m = d.regex.search(lines[line], col) if line < len(lines) else None
            if m is None:
                raise _fail(d, "not found on the same line after the previous match", lines, line)
            found = (line, m)
        k, m = found
        check_nots(k, m.start())
        line, col = k, m.end()
    if pending_not:
        check_nots(len(lines) - 1, len(lines[-1]) if lines else 0)
