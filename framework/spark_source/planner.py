"""lakesieve's planner as the JVM data source sees it: a py4j callback on the driver.

The Java source (``LakesieveScanBuilder``) calls :meth:`ScanPlanner.plan`
once per scan with the relation's options, Spark's pushed filters (JSON,
:mod:`lakesieve.spark_source.filters`) and the columns the query needs. The
planner opens the table, plans with its indexes (stale, missing or corrupt
indexes widen the selection, never narrow it) and answers with a line
describing the selection and either the selected files, when each is a
Parquet file Spark reads as it is (:mod:`lakesieve.spark_source.file_list`:
positions in the instant's file list, which crosses to the JVM once), or the
frame ``Table.read`` would read for the selected units, in exactly those
columns.

Each scan lists the timeline and reads the index log once: the two key the
answers kept per (table, instant, index log version, filters, columns) and
plan a new one. The planner keeps the tables it opened for a few minutes (per
options), so that the format's answers about a completed instant (its
snapshot, its schema, its files) and the indexes loaded per state are not read
again for every scan. Scans of one table plan one at a time.

Errors a user caused come back as their one-line message; Spark raises it as
an ``IllegalArgumentException``.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar

from lakesieve.errors import LakesieveError, OptionError
from lakesieve.sources.scan import (
    RETIRED_OPTIONS,
    conform,
    describe_scan,
    frame_of_units,
    log,
    option,
    table_from_options,
)
from lakesieve.spark_source.file_list import (
    InstantFiles,
    covers,
    instant_files,
    selection,
    spark_schema,
)
from lakesieve.spark_source.filters import filters_to_predicate, pushed_sql

if TYPE_CHECKING:
    from lakesieve.model import Instant
    from lakesieve.store.index_log import LogSnapshot
    from lakesieve.table import Table
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

_JAVA_PLANNERS = "org.lakesieve.spark.Planners"
_lock = threading.Lock()
_registered: dict[int, ScanPlanner] = {}
#: Schemas remembered per (options, table, instant); the oldest goes first.
_SCHEMAS_KEPT = 64
#: Scan answers (files read as they are) remembered; the oldest goes first.
_ANSWERS_KEPT = 256
#: Table instants whose files (:class:`InstantFiles`) are remembered; the oldest goes first.
_INSTANTS_KEPT = 16
#: Open tables kept per options, and for how long (seconds) one is reused.
_TABLES_KEPT = 16
_TABLE_SECONDS = 300.0


def _message(exc: BaseException, what: str) -> str:
    if isinstance(exc, LakesieveError):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = str(exc).strip().splitlines()
    return f"lakesieve could not {what}: {type(exc).__name__}: {text[0] if text else ''}"


def _check_options(options: dict[str, str]) -> None:
    for key in options:
        if key.lower() in RETIRED_OPTIONS:
            raise OptionError(
                f"option {key} of format('lakesieve') is retired: the source always prunes with "
                "the table's indexes and reads only the columns a query needs"
            )


class ScanPlanner:
    """Answers the Java ``ScanPlanner`` interface for one SparkSession."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._schemas: dict[tuple[str, str, str | None], str] = {}
        self._data: dict[tuple[str, str, str | None], StructType | None] = {}
        self._answers: dict[tuple[Any, ...], tuple[InstantFiles, str, str]] = {}
        self._files: dict[tuple[str, str, str], InstantFiles | None] = {}
        self._tables: dict[str, tuple[Table, threading.Lock, float]] = {}
        self._java: tuple[Any, Any] | None = None

    def _java_classes(self) -> tuple[Any, Any]:
        """The Java ``ScanAnswer`` and ``FileTables`` classes (looked up once: each lookup is a round trip)."""
        if self._java is None:
            jvm = self._spark.sparkContext._jvm
            assert jvm is not None
            self._java = (jvm.org.lakesieve.spark.ScanAnswer, jvm.org.lakesieve.spark.FileTables)
        return self._java

    def _table(self, options: dict[str, str]) -> tuple[Table, threading.Lock]:
        """The table ``options`` name, opened at most ``_TABLE_SECONDS`` ago, and its planning lock."""
        key = json.dumps(options, sort_keys=True)
        now = time.monotonic()
        with _lock:
            known = self._tables.get(key)
            if known is not None and now - known[2] < _TABLE_SECONDS:
                return known[0], known[1]
        table = table_from_options(options)
        guard = threading.Lock()
        with _lock:
            self._tables.pop(key, None)
            if len(self._tables) >= _TABLES_KEPT:
                self._tables.pop(next(iter(self._tables)))
            self._tables[key] = (table, guard, now)
        return table, guard

    def _data_schema(
        self, table: Table, options: dict[str, str], instant: str | None, units: Any
    ) -> StructType | None:
        """The format's Spark schema of the table at ``instant`` (remembered); ``None``: it has none."""
        key = (json.dumps(options, sort_keys=True), table.path, instant)
        if key in self._data:
            return self._data[key]
        found = spark_schema(self._spark, table.view.fmt, instant, units)
        with _lock:
            if len(self._data) >= _SCHEMAS_KEPT:
                self._data.pop(next(iter(self._data)))
            self._data[key] = found
        return found

    def _instant_files(
        self, table: Table, options: dict[str, str], instant: str, units: Any
    ) -> InstantFiles | None:
        """The files of the table's units at ``instant`` read as they are (remembered per instant)."""
        key = (json.dumps(options, sort_keys=True), table.path, instant)
        if key in self._files:
            return self._files[key]
        data = self._data_schema(table, options, instant, units)
        found = instant_files(table.view.fmt, units, instant, data)
        with _lock:
            if len(self._files) >= _INSTANTS_KEPT:
                self._files.pop(next(iter(self._files)))
            self._files[key] = found
        return found

    def _files_answer(self, files: InstantFiles, chosen: str, description: str) -> Any:
        """The Java answer reading ``chosen`` of ``files``: their list crosses to the JVM once."""
        _, tables = self._java_classes()
        found = tables.answer(files.token, chosen, description)
        if found is None:  # not sent yet, or no longer kept there
            found = tables.load(files.token, files.table, chosen, description)
        return found

    def schema(self, options_json: str) -> str:
        """The table's Spark schema for these options, as JSON (or ``{"error": ...}``).

        The schema is the one ``Table.read`` gives the snapshot (types as Spark
        reads the data files), remembered per options and instant: loading the
        same table again costs a timeline read, not a new frame. A format that
        answers ``spark_schema`` (:mod:`lakesieve.spark_source.file_list`) gives
        it without a frame; for any other the snapshot's frame is built once.
        """
        try:
            options = json.loads(options_json)
            _check_options(options)
            table, guard = self._table(options)
            as_of = option(options, "asOf")
            with guard:  # the instant alone keys the schema: no snapshot is listed for a known one
                resolved = table.resolve_instant(as_of)
            instant = resolved.id if resolved else None
            key = (json.dumps(options, sort_keys=True), table.path, instant)
            known = self._schemas.get(key)
            if known is None:
                with guard:
                    units = table.snapshot(instant).units if resolved else ()
                    data = self._data_schema(table, options, instant, units)
                    if data is None:
                        plan = table.plan(None, instant, "UTC")
                        names = table.schema(instant).names
                        data = frame_of_units(self._spark, table, plan, names).schema
                fields = [{**f, "nullable": True} for f in json.loads(data.json())["fields"]]
                known = json.dumps({"schema": {"type": "struct", "fields": fields}})
                with _lock:
                    if len(self._schemas) >= _SCHEMAS_KEPT:
                        self._schemas.pop(next(iter(self._schemas)))
                    self._schemas[key] = known
            return known
        except Exception as exc:
            return json.dumps({"error": _message(exc, "read the table's schema")})

    def plan(self, request_json: str) -> Any:
        """What one scan reads: a Java ``ScanAnswer`` with the files or a frame, and its description."""
        from lakesieve.spark.object_storage import prepare
        from pyspark.sql.types import StructType

        answers, _ = self._java_classes()
        try:
            request = json.loads(request_json)
            options = request["options"]
            _check_options(options)
            table, guard = self._table(options)
            where = filters_to_predicate(request["filters"])
            wanted = StructType.fromJson(request["schema"])
            with guard:
                line, index_log = self._read_state(table, bool(request["filters"]))
                key = self._answer_key(table, request, line, index_log)
                known = self._answers.get(key) if key is not None else None
                if known is not None:
                    log.info(known[2])
                    return self._files_answer(*known)
                # filter values are typed (instants carry their zone): no session zone applies
                as_of = key[1] if key else option(options, "asOf")
                plan = table.plan(where, as_of, "UTC", line=line, log=index_log)
                shown = pushed_sql(request["filters"], request.get("shown"))
                description = describe_scan(plan, table, shown, index_log)
                instant = plan.table_instant.id if plan.table_instant else None
                files = chosen = None
                if instant is not None:
                    files = self._instant_files(table, options, instant, plan.snapshot.units)
                if files is not None and covers(files.data, wanted):
                    chosen = selection(files, plan.units, plan.units is plan.snapshot.units)
                if files is not None and chosen is not None:
                    prepare(self._spark, table.path, table.ref.options)
                    if key is not None and key[1] == instant:
                        self._remember(key, (files, chosen, description))
                    log.info(description)
                    return self._files_answer(files, chosen, description)
                frame = conform(frame_of_units(self._spark, table, plan, wanted.names), wanted)
            log.info(description)
            return answers.of(frame._jdf, description)
        except Exception as exc:
            return answers.failure(_message(exc, "plan a scan"))

    @staticmethod
    def _read_state(table: Table, filtered: bool) -> tuple[list[Instant], LogSnapshot | None]:
        """The table's timeline and its index log, each read once for one scan.

        Both key the answer (:meth:`_answer_key`) and the same reads plan it
        (``Table.plan``). The log is read leniently, as a query reads it; an
        unreadable one is ``None``: the plan reads it again and says why it
        reads every location.
        """
        store = table.states.store
        if filtered:
            store.read_log_ahead()  # the index log's requests beside the table's
        line = table.timeline()
        try:
            return line, store.read_log(strict=False)
        except Exception:
            return line, None

    def _answer_key(
        self,
        table: Table,
        request: dict[str, Any],
        line: list[Instant],
        index_log: LogSnapshot | None,
    ) -> tuple[Any, ...] | None:
        """What a scan's answer depends on: the table, its instant, the index log version,
        the pushed filters and the columns; ``None`` when the log cannot be read (no caching).

        A commit to the table (a new instant) or to the index log (a new version) makes a
        new key, so a cached answer is never older than what a fresh plan would read.
        """
        options = request["options"]
        resolved = table.resolve_instant(option(options, "asOf"), line)
        if resolved is None or index_log is None or index_log.problems:
            return None
        return (
            json.dumps(options, sort_keys=True),
            resolved.id,
            index_log.version,
            json.dumps(request["filters"], sort_keys=True),
            json.dumps(request["schema"], sort_keys=True),
            json.dumps(request.get("shown")),
        )

    def _remember(self, key: tuple[Any, ...], answer: tuple[InstantFiles, str, str]) -> None:
        with _lock:
            if len(self._answers) >= _ANSWERS_KEPT:
                self._answers.pop(next(iter(self._answers)))
            self._answers[key] = answer

    class Java:
        """What py4j's callback server tells the JVM this object implements."""

        implements: ClassVar[list[str]] = ["org.lakesieve.spark.ScanPlanner"]


def registered(spark: SparkSession) -> bool:
    """Whether the JVM of ``spark`` has lakesieve's planner registered."""
    jvm = spark.sparkContext._jvm
    try:
        return bool(jvm.org.lakesieve.spark.Planners.registered())  # type: ignore[union-attr]
    except Exception:
        return False


def register(spark: SparkSession) -> None:
    """Make ``spark``'s driver ask lakesieve's planner for every ``format("lakesieve")`` scan.

    The session must have the data source's jar (:func:`lakesieve.spark_source.jar`) in
    ``spark.jars`` from its start.

    Raises:
        OptionError: ``spark`` is a Spark Connect session, or its driver lacks the jar.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    try:
        context = spark.sparkContext
    except Exception as exc:
        raise OptionError(
            "lakesieve's Spark SQL source needs a classic PySpark session; a Spark Connect "
            "client reads through format('lakesieve') as a Python data source"
        ) from exc
    jvm = context._jvm
    gateway = context._gateway
    assert jvm is not None and gateway is not None
    try:
        jvm.java.lang.Class.forName(
            _JAVA_PLANNERS, True, jvm.java.lang.Thread.currentThread().getContextClassLoader()
        )
    except Exception as exc:
        raise OptionError(
            "this Spark session has no lakesieve data source on its classpath: start it with "
            "spark.jars set to lakesieve.spark_source.jar()"
        ) from exc
    with _lock:
        ensure_callback_server_started(gateway)
        planner = ScanPlanner(spark)
        jvm.org.lakesieve.spark.Planners.register(planner)
        _registered[id(spark)] = planner  # kept alive while the JVM may call it
