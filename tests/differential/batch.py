"""Many predicates' Spark reads collected in one job, and the predicate that fails found alone.

A Spark action costs a job (scheduling, tasks, Arrow collection) whatever
its size; the differential tables are small, so one job per predicate and
read path is mostly overhead. :func:`collect_each` takes one DataFrame per
predicate, each made exactly as a single check makes it, tags each with its
predicate number (column :data:`TAG`), collects their union in one action
(:data:`BATCH` predicates at a time) and splits the answer by tag.

If that action fails (a runtime error of one predicate fails the whole job),
the batch is halved and each half collected again, down to single
predicates; a single predicate is always run on its own, through the same
code a check of that predicate alone runs, so an error is attributed to the
predicate that raised it, with the message it raises alone.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

R = TypeVar("R")

#: The column holding each row's predicate number in a batched answer.
TAG = "__pred"
_VIEW = "diff_batch_"
#: At most this many predicates per Spark job: the optimizer's work on a union grows
#: faster than the union.
BATCH = int(os.environ.get("LAKESIEVE_DIFF_BATCH", "16"))


def union_tagged(frames: Mapping[int, Any]) -> Any:
    """The union of ``frames``, each row tagged with its frame's key in :data:`TAG`.

    Each frame is named by a temporary view and the union is one SQL text
    (``SELECT *, <key> AS __pred FROM <view> UNION ALL ...``): a few calls into
    the JVM per frame, where tagging and unioning DataFrames one by one costs
    an analysis each. A view of a DataFrame holds its analysed plan, so each
    branch is the frame as it was made. The views are replaced by the next
    batch (their names are the keys), not dropped: dropping costs a call each.
    The union is coalesced to two partitions: fewer tasks for the same reads,
    above every branch's own filter and scan.
    """
    keys = sorted(frames)
    spark = frames[keys[0]].sparkSession
    for k in keys:
        frames[k].createOrReplaceTempView(f"{_VIEW}{k}")
    text = " UNION ALL ".join(f"SELECT *, {k} AS {TAG} FROM {_VIEW}{k}" for k in keys)
    return spark.sql(text).coalesce(2)


def collect_tagged(frames: Mapping[int, Any]) -> dict[int, pa.Table]:
    """Collect the union of ``frames`` in one action; the rows of each frame, by key."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got: pa.Table = union_tagged(frames).toArrow()
    tags = got.column(TAG)
    return {k: got.filter(pc.equal(tags, pa.scalar(k, tags.type))) for k in frames}


def collect_each(
    frames: Mapping[int, Any],
    alone: Callable[[int], R],
    split: Callable[[int, pa.Table], R],
) -> dict[int, R]:
    """Every key's result: ``split(key, rows)`` from a batched collection, or ``alone(key)``.

    ``frames`` are collected :data:`BATCH` at a time; a failed collection is halved and
    retried. A key left on its own is never collected from ``frames``:
    ``alone(key)`` makes and runs that predicate's query exactly as a single
    check does (and reports its error its own way).
    """
    results: dict[int, R] = {}
    keys = sorted(frames)
    pending = [keys[i : i + BATCH] for i in range(0, len(keys), BATCH)][::-1]
    while pending:
        keys = pending.pop()
        if not keys:
            continue
        if len(keys) == 1:
            results[keys[0]] = alone(keys[0])
            continue
        try:
            parts = collect_tagged({k: frames[k] for k in keys})
        except Exception:
            half = len(keys) // 2
            pending += [keys[half:], keys[:half]]
            continue
        for k in keys:
            results[k] = split(k, parts[k])
    return results
