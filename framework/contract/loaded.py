"""What the planner asks: the loaded index itself, or its type for an older plugin."""

from __future__ import annotations

from typing import Any

from lakesieve.contract.plugin_base import IndexTypeBase
from lakesieve.contract.protocols import LoadedIndex
from lakesieve.model import KeyQuery, LookupResult

__all__ = ["answering"]


class _AskTheType:
    """A loaded object that does not answer for itself, asked through its index type."""

    def __init__(self, index_type: Any, obj: Any) -> None:
        self.index_type = index_type
        self.obj = obj

    def lookup(self, query: KeyQuery) -> LookupResult:
        """The type's ``lookup(obj, query)``."""
        result: LookupResult = self.index_type.lookup(self.obj, query)
        return result

    def describe(self) -> dict[str, Any]:
        """The type's ``describe(obj)``."""
        details: dict[str, Any] = self.index_type.describe(self.obj)
        return details


def _asks_the_object(index_type: Any, name: str) -> bool:
    """Whether ``index_type``'s ``name`` method is :class:`IndexTypeBase`'s, which asks the object."""
    own = getattr(type(index_type), name, None)
    return own is None or own is getattr(IndexTypeBase, name)


def answering(index_type: Any, obj: Any) -> LoadedIndex:
    """``obj`` as a :class:`LoadedIndex`: itself when it answers and its type adds nothing.

    A type that overrides ``lookup`` or ``describe`` (or whose object has
    neither) is asked as before, so no plugin's answers change.
    """
    if (
        isinstance(obj, LoadedIndex)
        and _asks_the_object(index_type, "lookup")
        and _asks_the_object(index_type, "describe")
    ):
        return obj
    return _AskTheType(index_type, obj)
