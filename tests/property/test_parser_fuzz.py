"""Mutated IR text either parses (and then prints and re-parses identically) or raises
ParseError / VerifyError: the parser never fails with any other exception."""

from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing.strategies import tensor_graphs

ALPHABET = st.sampled_from(
    list("%@(){}[]<>,:=-+.\"\\x0123456789 \n\tabefinrstuvyz_/;'²é")
    + [
        "tensor",
        "tensor<",
        "f32",
        "bf16",
        "i8",
        "dense<",
        "return",
        "graph",
        "//",
        "%x0",
        "nan",
        "inf",
        "1e309",
        "-0.0",
        "0x",
        "\\x4",
        "\x00",
        "[",
        "]" * 3,
        "axes",
        "kind",
        "true",
        "none",
    ]
)


@st.composite
def _mutated(draw):
    text = str(draw(tensor_graphs(max_ops=4, dtypes=(nk.float32, nk.bfloat16, nk.int8))))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "swap_lines", "dup_line"]))
        i = draw(st.integers(0, len(text)))
        if kind == "insert":
            text = text[:i] + draw(ALPHABET) + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 8)) :]
        elif kind == "replace":
            text = text[:i] + draw(ALPHABET) + text[i + 1 :]
        else:
            lines = text.split("\n")
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if kind == "swap_lines":
                lines[a], lines[b] = lines[b], lines[a]
            else:
                lines.insert(b, lines[a])
            text = "\n".join(lines)
    return text


@settings(max_examples=settings.default.max_examples * 12)
@given(_mutated())
def test_mutated_text_parses_or_fails_cleanly(text):
    try:
        g = nk.parse(text)
    except (nk.ParseError, nk.VerifyError):
        return
    printed = str(g)
    assert str(nk.parse(printed)) == printed
