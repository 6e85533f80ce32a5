"""An index state ready for lookups, or the reason it is not usable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lakesieve.contract import registry
from lakesieve.contract.loaded import answering
from lakesieve.contract.protocols import LoadedIndex
from lakesieve.store.index_log import IndexDefinition, IndexState

__all__ = ["IndexInUse"]


@dataclass
class IndexInUse:
    """An index state ready for lookups, or the reason it is not usable.

    Attributes:
        definition: the index as declared in the log.
        state: the state chosen for the query's instant (``None``: never built).
        obj: what the index type's load hook returned.
        error: why the index cannot be used (``obj`` is then ``None``).
        added_for_staleness: locations changed between the state's instant and
            the query's, added to every answer of this index.
        overlay: the summed delta chain on top of the base, for a state refreshed
            incrementally (``None`` for a base state).
        selected: locations this index selected over all leaves it answered,
            only those the queried snapshot has (``visible``).
        visible: the locations of the queried snapshot (``None``: not known).
            An index may still name locations a later commit removed (its base
            keeps them until compaction); they are never read, nor reported.
        unseen: locations of the queried snapshot the state never saw
            (:mod:`lakesieve.store.seen_locations`); they are part of
            ``added_for_staleness``, whatever the format's change record says.
    """

    definition: IndexDefinition
    state: IndexState | None
    obj: Any = None
    error: str = ""
    added_for_staleness: frozenset[str] = frozenset()
    unseen: int = 0
    overlay: Any = None
    answered: int = 0
    visible: frozenset[str] | None = None
    _answers: list[frozenset[str]] = field(default_factory=list, repr=False, compare=False)
    _type: Any = field(default=None, repr=False, compare=False)
    _loaded: LoadedIndex | None = field(default=None, repr=False, compare=False)

    @property
    def selected(self) -> set[str]:
        """Locations of the snapshot this index selected over all leaves it answered."""
        chosen: set[str] = set().union(*self._answers)
        return chosen if self.visible is None else chosen & self.visible

    def record(self, answer: frozenset[str]) -> None:
        """Count one leaf this index answered, with the locations it selected."""
        self.answered += 1
        if not self._answers or self._answers[-1] is not answer:
            self._answers.append(answer)

    @property
    def usable(self) -> bool:
        """Whether lookups can be asked of this index."""
        return self.obj is not None and not self.error

    def index_type(self) -> Any:
        """The installed index type of this index, looked up once per loaded index."""
        if self._type is None:
            self._type = registry.index_type(self.definition.type)
        return self._type

    def loaded(self) -> LoadedIndex:
        """The loaded index the planner asks (:func:`lakesieve.contract.loaded.answering`)."""
        if self._loaded is None:
            self._loaded = answering(self.index_type(), self.obj)
        return self._loaded
