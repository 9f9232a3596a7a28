"""Op traits: marker classes an op class lists in ``traits`` to declare its properties."""


class Trait:
    """Base of all traits; traits are used as classes, never instantiated."""


class Pure(Trait):
    """No side effects: the op may be removed when unused, deduplicated, or moved."""


class SideEffect(Trait):
    """Reads or writes memory (or otherwise must not be removed or reordered)."""


class Elementwise(Trait):
    """Each result element depends only on the operand elements at the same index."""


class Commutative(Trait):
    """A binary op whose two operands may be swapped."""


class Reduction(Trait):
    """Combines elements along some axes."""


class HasRegion(Trait):
    """Owns one or more regions (e.g. a loop body)."""


class Terminator(Trait):
    """Must be the last op of its block."""


class ExplicitResultTypes(Trait):
    """Result types cannot be inferred from operands; they are given at construction."""


class Engine(Trait):
    """Runs on a NeuronCore engine; the engine is recorded in the op's ``engine`` attribute."""
