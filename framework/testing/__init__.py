"""Contract test kits that format plugins and index types run (pytest).

``from lakesieve.testing import IndexContract`` (or
``lakesieve.testing.index_contract``) gives the index-type kit, and
``from lakesieve.testing import FormatContract`` (or
``lakesieve.testing.format_contract``) the format-plugin kit. The kits need
the ``dev`` extra (pytest, hypothesis); they are imported on first use, so
importing this package alone needs neither.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FormatContract", "IndexContract"]


def __getattr__(name: str) -> Any:
    if name == "IndexContract":
        from lakesieve.testing.index_contract import IndexContract

        return IndexContract
    if name == "FormatContract":
        from lakesieve.testing.format_contract import FormatContract

        return FormatContract
    raise AttributeError(f"module 'lakesieve.testing' has no attribute {name!r}")
