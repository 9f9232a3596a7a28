"""``Kernel.io``: a kernel's inputs, outputs and aliases under the user's names, in one place.

Every backend-facing description reads it: ``Kernel.custom_call()`` (``aliases``), the emitted
module (``INPUT_NAMES`` / ``OUTPUT_NAMES`` / ``ALIASES``), ``nkigen-lite compile`` (the
signature it prints). An alias ``cache_out -> cache`` means the kernel updates the input
``cache`` in place and returns that buffer as ``cache_out``; the interpreters and the simulator
return the updated contents under the output name and leave the caller's array unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IOEntry:
    """One kernel input or output: graph name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: object  # a DType

    def to_dict(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype.numpy_name}

    def __str__(self) -> str:
        return f"{self.name}: {'x'.join(map(str, self.shape)) or 'scalar'} {self.dtype}"


@dataclass(frozen=True)
class KernelIO:
    """Inputs and outputs in signature order; ``aliases`` maps output names to the input names
    they update in place."""

    inputs: tuple[IOEntry, ...]
    outputs: tuple[IOEntry, ...]
    aliases: dict

    @staticmethod
    def of_graph(graph) -> KernelIO:
        """The IO of a tensor (or NKI) graph."""
        pairs = zip(graph.input_names, graph.inputs)
        ins = tuple(IOEntry(n, tuple(v.type.shape), v.type.dtype) for n, v in pairs)
        outs = tuple(IOEntry(n, tuple(v.type.shape), v.type.dtype) for n, v in graph.outputs.items())
        return KernelIO(ins, outs, dict(graph.aliases))

    @property
    def input_names(self) -> list[str]:
        return [e.name for e in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [e.name for e in self.outputs]

    def alias_of(self, output: str) -> str | None:
        """The input ``output`` updates in place, or None."""
        return self.aliases.get(output)

    def to_dict(self) -> dict:
        """JSON-serialisable form (lists and strings only)."""
        return {
            "inputs": [e.to_dict() for e in self.inputs],
            "outputs": [e.to_dict() for e in self.outputs],
            "aliases": [{"output": o, "input": i} for o, i in self.aliases.items()],
        }

    def __str__(self) -> str:
        outs = []
        for e in self.outputs:
            a = self.aliases.get(e.name)
            outs.append(f"{e} (in place of {a})" if a else str(e))
        return f"({', '.join(map(str, self.inputs))}) -> ({', '.join(outs)})"
