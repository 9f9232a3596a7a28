"""IO aliasing rules: an output may update an input's buffer in place.

``graph.aliases`` maps output names to input names (recorded on the return op, printed as
``return cache_out = %c (aliases cache)``). The rules, shared by both dialects:

- the aliased name is an input of the graph, and each input is aliased by one output at most;
- the output has the input's shape and dtype (it is written into the same buffer);
- the input's old contents are not returned under another name: the kernel overwrites them, so
  another output that is the input unchanged would read the buffer after it is overwritten.
"""

from __future__ import annotations

from .errors import BuildError


def check_alias_names(graph, outputs: dict, aliases: dict[str, str]) -> None:
    """Raise BuildError when ``aliases`` (output name -> input name) breaks a rule for
    ``outputs`` (name -> Value) of ``graph``."""
    if not isinstance(aliases, dict):
        raise BuildError(f"aliases must be a dict {{output name: input name}}, got {type(aliases).__name__}")
    taken: dict[str, str] = {}
    inputs = dict(zip(graph.input_names, graph.inputs))
    for out, inp in aliases.items():
        if out not in outputs:
            raise BuildError(
                f"aliases: {out!r} is not an output of @{graph.name} (outputs: {', '.join(outputs)})"
            )
        if inp not in inputs:
            raise BuildError(
                f"aliases: output {out!r} aliases {inp!r}, which is not an input of @{graph.name} "
                f"(inputs: {', '.join(graph.input_names) or 'none'})"
            )
        if inp in taken:
            raise BuildError(f"aliases: input {inp!r} is aliased by two outputs, {taken[inp]!r} and {out!r}")
        taken[inp] = out
        ot, it = outputs[out].type, inputs[inp].type
        if tuple(ot.shape) != tuple(it.shape) or ot.dtype is not it.dtype:
            raise BuildError(
                f"aliases: output {out!r} ({_describe(ot)}) cannot alias input {inp!r} "
                f"({_describe(it)}): shape and dtype must match"
            )
        for other, v in outputs.items():
            if other != out and v is inputs[inp]:
                raise BuildError(
                    f"aliases: output {other!r} returns input {inp!r} unchanged, but output {out!r} "
                    f"overwrites {inp!r} in place, so {other!r} would be read after it is "
                    "overwritten; return a copy or drop the alias"
                )


def _describe(t) -> str:
    return f"{'x'.join(map(str, t.shape)) or 'scalar'} {t.dtype}"
