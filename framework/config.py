"""Declarative index configuration: ``lakesieve.toml``.

A config file declares tables and, per table, the indexes to keep on them;
``lakesieve index build --config lakesieve.toml`` (or :func:`build_declared`)
builds every declared index that is missing or stale and leaves up-to-date
ones alone. Schema::

    [spark]                                  # optional
    master = "local[*]"                      # optional, a string
    conf = { "spark.sql.shuffle.partitions" = "8" }   # optional, key -> scalar

    [tables.lineitem]                        # one section per table; the name is a label
    path = "/data/lineitem"                  # required; relative to this file's folder,
                                             # or a URL (s3://lake/lineitem)
    format = "hudi"                          # optional: detected from the files
    options = { }                            # optional: format options, key -> scalar
    storage_options = { AWS_REGION = "eu-west-1" }  # optional: object-store settings
                                             # (over the AWS_* environment variables)
    index_root = "s3://lake/idx/lineitem"    # optional: default <path>/.lakesieve

    [[tables.lineitem.indexes]]              # zero or more
    column = "l_orderkey"                    # required
    type = "sieve"                           # optional, default "sieve"
    name = "l_orderkey_sieve"                # optional, default "<column>_<type>"
    options = { target_fpr = 0.05 }          # optional, key -> scalar (given to the
                                             # index type as strings)

:func:`load_config` checks everything before anything is built, without Spark:
unknown keys at any level, values of the wrong kind, unknown formats and index
types, table paths that do not exist, columns the table does not have, options
the index type rejects, and index names declared twice on one table. Each
problem raises a :class:`~lakesieve.errors.LakesieveError` (mostly
:class:`~lakesieve.errors.OptionError`) with a one-line message naming the
file, the key path (``tables.lineitem.indexes[0].options.target_fpr``) and
what was expected.

An index is *stale* when its latest state is not at the table's latest
instant, or when the declared options differ from the stored ones; it is
rebuilt too when its latest state fails to verify (a file missing, truncated
or failing its checksum: the build then removes the broken states); a declared
index whose stored definition has another type or column is refused (drop it
first), the same rule as ``lakesieve index build``.
"""

from __future__ import annotations

import json
import os
import re
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakesieve.contract import registry
from lakesieve.errors import LakesieveError, OptionError
from lakesieve.expressions import resolve_column
from lakesieve.files import paths
from lakesieve.maintenance.index_health import broken_head
from lakesieve.spark.object_storage import STORAGE_PREFIX
from lakesieve.spark.session import get_spark
from lakesieve.store.index_log import default_index_name
from lakesieve.table import open as open_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_INDEX_TYPE = "sieve"
_TOP_KEYS = {"spark", "tables"}
_SPARK_KEYS = {"master", "conf"}
_TABLE_KEYS = {"path", "format", "options", "storage_options", "index_root", "indexes"}
_INDEX_KEYS = {"column", "type", "name", "options"}
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class SparkConfig:
    """The ``[spark]`` section.

    Attributes:
        master: Spark master URL (``None``: the session's default).
        conf: extra Spark settings.
    """

    master: str | None = None
    conf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IndexSpec:
    """One declared index, checked against its table.

    Attributes:
        name: the index name.
        type: the index type.
        column: the column as the table spells it.
        key_type: the column's Spark type.
        options: the declared options, as strings.
        params: the options parsed by the index type (defaults filled in).
        key: the key path of this index in the file, for messages.
    """

    name: str
    type: str
    column: str
    key_type: str
    options: dict[str, str]
    params: dict[str, Any]
    key: str


@dataclass(frozen=True)
class TableSpec:
    """One declared table.

    Attributes:
        name: the label under ``[tables]``.
        path: the absolute table root.
        format: the format (given or detected).
        options: format options (storage options with their ``storage.`` prefix).
        indexes: the declared indexes.
        index_root: where the indexes live (``None``: the format's default).
    """

    name: str
    path: str
    format: str
    options: dict[str, str]
    indexes: tuple[IndexSpec, ...]
    index_root: str | None = None


@dataclass(frozen=True)
class Config:
    """A loaded and checked ``lakesieve.toml``.

    Attributes:
        source: the config file.
        spark: Spark settings.
        tables: the declared tables, in file order.
    """

    source: str
    spark: SparkConfig
    tables: tuple[TableSpec, ...]


def _key(base: str, *parts: str) -> str:
    """Append TOML keys (quoted when not bare) to an already formatted key path."""
    out = base
    for part in parts:
        text = part if _BARE_KEY.match(part) else json.dumps(part)
        out = f"{out}.{text}" if out else text
    return out


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"


class _Checker:
    """Raises one-line errors naming the file and the key path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(
        self, key: str, message: str, cls: type[LakesieveError] = OptionError
    ) -> LakesieveError:
        where = f"{self.source}: {key}: " if key else f"{self.source}: "
        text = " ".join(message.split())
        return cls(where + text)

    def wrap(self, key: str, exc: LakesieveError) -> LakesieveError:
        return self.fail(key, str(exc), type(exc))

    def table(self, value: Any, key: str, allowed: set[str] | None = None) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table, got {_kind(value)}")
        if allowed is not None:
            for k in value:
                if k not in allowed:
                    raise self.fail(
                        _key(key, k),
                        f"unknown key; expected one of: {', '.join(sorted(allowed))}",
                    )
        return value

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value.strip():
            got = "an empty string" if isinstance(value, str) else _kind(value)
            raise self.fail(key, f"expected a non-empty string, got {got}")
        return value.strip()

    def scalars(self, value: Any, key: str) -> dict[str, str]:
        table = self.table(value, key)
        out: dict[str, str] = {}
        for k, v in table.items():
            if isinstance(v, bool):
                out[k] = "true" if v else "false"
            elif isinstance(v, int | float | str):
                out[k] = str(v)
            else:
                raise self.fail(
                    _key(key, k), f"expected a string, number or boolean, got {_kind(v)}"
                )
        return out


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and check a ``lakesieve.toml``; nothing is built and Spark is not started.

    Args:
        path: the config file.

    Returns:
        The checked configuration, with absolute table paths and parsed options.

    Raises:
        OptionError: the file is missing, is not TOML, or has an unknown key or a
            value of the wrong kind, a duplicate index name or a rejected option.
        LakesieveError: a subclass from the table or plugin layer (unknown
            format, index type or column; missing table), its message prefixed
            with the file and the key path.
    """
    source = os.fspath(path)
    check = _Checker(source)
    try:
        with open(source, "rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise check.fail("", "config file not found") from None
    except OSError as exc:
        raise check.fail("", f"cannot read the config file: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise check.fail("", f"invalid TOML: {exc}") from None
    base = Path(source).resolve().parent

    check.table(raw, "", _TOP_KEYS)
    spark_raw = check.table(raw.get("spark", {}), "spark", _SPARK_KEYS)
    master = check.string(spark_raw["master"], "spark.master") if "master" in spark_raw else None
    conf = check.scalars(spark_raw.get("conf", {}), "spark.conf")
    spark = SparkConfig(master, conf)

    tables_raw = check.table(raw.get("tables", {}), "tables")
    if not tables_raw:
        raise check.fail(
            "tables", "expected at least one table, e.g. [tables.mytable] with path = ..."
        )
    tables: list[TableSpec] = []
    names_by_path: dict[str, dict[str, str]] = {}
    for label, entry in tables_raw.items():
        tables.append(_load_table(check, base, label, entry, names_by_path))
    return Config(source, spark, tuple(tables))


def _location(base: Path, text: str) -> str:
    """A path of the file, relative to its folder; a URL (``s3://...``) as written."""
    local = paths.local_path(text)
    if local is None:
        return text.rstrip("/")
    return os.path.abspath(base / os.path.expanduser(local))


def _load_table(
    check: _Checker,
    base: Path,
    label: str,
    entry: Any,
    names_by_path: dict[str, dict[str, str]],
) -> TableSpec:
    tkey = _key("tables", label)
    entry = check.table(entry, tkey, _TABLE_KEYS)
    if "path" not in entry:
        raise check.fail(tkey, "missing required key 'path' (the table root)")
    root = _location(base, check.string(entry["path"], _key(tkey, "path")))
    index_root = None
    if "index_root" in entry:
        index_root = _location(base, check.string(entry["index_root"], _key(tkey, "index_root")))
    fmt = check.string(entry["format"], _key(tkey, "format")) if "format" in entry else None
    options = check.scalars(entry.get("options", {}), _key(tkey, "options"))
    storage = check.scalars(entry.get("storage_options", {}), _key(tkey, "storage_options"))
    options.update({STORAGE_PREFIX + k: v for k, v in storage.items()})
    if fmt is not None:
        try:
            registry.require_format(fmt)
        except LakesieveError as exc:
            raise check.wrap(_key(tkey, "format"), exc) from None
    if paths.local_path(root) is not None and not os.path.exists(root):
        raise check.fail(
            _key(tkey, "path"), f"expected an existing table root; {root!r} does not exist"
        )
    try:
        table = open_table(root, format=fmt, index_root=index_root, options=options)
        schema = table.schema() if table.resolve_instant(None) is not None else None
    except LakesieveError as exc:
        raise check.wrap(_key(tkey, "path"), exc) from None
    if schema is None:
        raise check.fail(_key(tkey, "path"), f"table {root} has no completed instant to index")

    indexes_raw = entry.get("indexes", [])
    ikey_all = _key(tkey, "indexes")
    if not isinstance(indexes_raw, list):
        raise check.fail(
            ikey_all, f"expected an array of tables ([[{ikey_all}]]), got {_kind(indexes_raw)}"
        )
    seen = names_by_path.setdefault(root, {})
    specs: list[IndexSpec] = []
    for i, item in enumerate(indexes_raw):
        ikey = f"{ikey_all}[{i}]"
        item = check.table(item, ikey, _INDEX_KEYS)
        if "column" not in item:
            raise check.fail(ikey, "missing required key 'column'")
        column = check.string(item["column"], _key(ikey, "column"))
        itype = (
            check.string(item["type"], _key(ikey, "type")) if "type" in item else DEFAULT_INDEX_TYPE
        )
        try:
            registry.require_index_type(itype)
        except LakesieveError as exc:
            raise check.wrap(_key(ikey, "type"), exc) from None
        try:
            col = resolve_column(schema, column, root)
        except LakesieveError as exc:
            raise check.wrap(_key(ikey, "column"), exc) from None
        okey = _key(ikey, "options")
        opts = check.scalars(item.get("options", {}), okey)
        params = _validate_options(check, okey, itype, opts, col.spark_type)
        name = (
            check.string(item["name"], _key(ikey, "name"))
            if "name" in item
            else default_index_name(col.name, itype)
        )
        if not _NAME_RE.match(name):
            raise check.fail(
                _key(ikey, "name") if "name" in item else ikey,
                f"invalid index name {name!r}: use letters, digits, '_', '-' or '.' (at most 128)",
            )
        if name in seen:
            raise check.fail(
                _key(ikey, "name") if "name" in item else ikey,
                f"duplicate index name {name!r} on table {root} (also declared at {seen[name]})",
            )
        seen[name] = ikey
        specs.append(IndexSpec(name, itype, col.name, col.spark_type, opts, params, ikey))
    return TableSpec(label, root, table.format, options, tuple(specs), index_root)


def _validate_options(
    check: _Checker, okey: str, itype: str, options: dict[str, str], key_type: str
) -> dict[str, Any]:
    """Run the index type's validate hook; blame the offending option when it can be found."""

    def validate(opts: dict[str, str]) -> dict[str, Any]:
        return registry.index_type(itype).validate(opts, key_type)

    try:
        return validate(options)
    except LakesieveError as exc:
        culprit = okey
        if isinstance(exc, OptionError):
            for name, value in options.items():
                try:
                    validate({name: value})
                except LakesieveError:
                    culprit = _key(okey, name)
                    break
        else:
            culprit = okey.rsplit(".", 1)[0] + ".column"
        raise check.wrap(culprit, exc) from None


def _canonical(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def build_declared(
    config: Config,
    spark: SparkSession | None = None,
    progress: Callable[[str], None] | None = None,
    spark_conf: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Build every declared index that is missing or stale; skip up-to-date ones.

    Every table's index log is checked before the first build, so a conflicting
    stored definition fails the run before anything is written. Spark starts only
    when something needs building.

    Args:
        config: from :func:`load_config`.
        spark: the session to build with; started from ``config.spark`` when needed.
        progress: called with one line before each build.
        spark_conf: Spark settings under the config's own ``[spark] conf``.

    Returns:
        One dict per declared index, in file order: ``table``, ``path``, ``index``,
        ``type``, ``column``, ``action`` (``"built"`` or ``"up-to-date"``),
        ``reason`` (why it was built), ``instant``, ``size_bytes`` and, for
        builds, ``seconds``.

    Raises:
        OptionError: a stored index of a declared name has another type or column.
    """
    check = _Checker(config.source)
    plan: list[tuple[TableSpec, IndexSpec, Any, str | None, str | None]] = []
    for tspec in config.tables:
        table = open_table(
            tspec.path, format=tspec.format, index_root=tspec.index_root, options=tspec.options
        )
        latest = table.resolve_instant(None)
        stored = {d.name: d for d in table.indexes()}
        for ispec in tspec.indexes:
            reason: str | None = None
            current = stored.get(ispec.name)
            state = current.latest() if current is not None else None
            if current is None:
                reason = "missing"
            elif current.type != ispec.type or current.column != ispec.column:
                raise check.fail(
                    ispec.key,
                    f"index {ispec.name!r} on table {tspec.path} already exists as {current.type} on "
                    f"column {current.column!r}; drop it first or choose another name",
                )
            elif state is None:
                reason = "never built"
            elif (
                _canonical(current.params) != _canonical(ispec.params)
                or current.key_type != ispec.key_type
            ):
                reason = "options changed"
            elif (problem := broken_head(table.store, current)) is not None:
                reason = f"broken: {problem}"
            elif latest is not None and state.instant != latest.id:
                reason = f"stale: index at {state.instant}, table at {latest.id}"
            plan.append((tspec, ispec, table, reason, state.instant if state else None))

    results: list[dict[str, Any]] = []
    for tspec, ispec, table, reason, instant in plan:
        base: dict[str, Any] = {
            "table": tspec.name,
            "path": tspec.path,
            "index": ispec.name,
            "type": ispec.type,
            "column": ispec.column,
        }
        if reason is None:
            state = table.index(ispec.name).latest()
            results.append(
                {
                    **base,
                    "action": "up-to-date",
                    "instant": instant,
                    "size_bytes": state.size_bytes if state else 0,
                }
            )
            continue
        if spark is None:
            spark = get_spark(
                master=config.spark.master, conf={**(spark_conf or {}), **config.spark.conf}
            )
        started = time.perf_counter()
        desc = table.build_index(
            ispec.column,
            type=ispec.type,
            name=ispec.name,
            options=ispec.options,
            spark=spark,
            progress=progress,
        )
        results.append(
            {
                **base,
                "action": "built",
                "reason": reason,
                "instant": desc["instant"],
                "size_bytes": desc["size_bytes"],
                "seconds": round(time.perf_counter() - started, 3),
            }
        )
    return results
