"""The index store on object storage: create-only commits, races, refusals, requests per explain.

Against a moto S3 server on 127.0.0.1 (a child process, :mod:`tests.s3_server`).
The end-to-end runs (Delta on S3 with its store beside it, every command) are in
``test_object_storage_tables.py``; here the store itself, with no Spark except
for the one build the request count needs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import lakesieve
import pyarrow as pa
import pytest
from lakesieve.errors import CommitConflictError, ConcurrentBuildError, IndexCorruptError
from lakesieve.maintenance.index_build import build_declared, declare_index
from lakesieve.maintenance.repair import check_store, repair
from lakesieve.store.blobs import CreateOnlyUnsupportedError, LocalBlobs, ObjectBlobs
from lakesieve.store.object_index import (
    ObjectIndexStore,
    UrlPath,
    clear_file_cache,
    state_time_ms,
)

from tests.s3_server import S3Server, moto_s3


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3(process=True) as server:
        yield server


def _define(name: str) -> dict[str, Any]:
    return {
        "op": "define",
        "index": name,
        "type": "zonemap",
        "column": "k",
        "key_type": "int64",
        "params": {},
    }


def test_url_paths_keep_their_scheme() -> None:
    """Messages name ``s3://bucket/...`` as a user typed it; state ids carry their time."""
    root = UrlPath("s3://lake/t/.lakesieve")
    assert str(root / "_log" / "0.json") == "s3://lake/t/.lakesieve/_log/0.json"
    assert str(UrlPath("abfss://c@acct.dfs.core.windows.net/t")) == (
        "abfss://c@acct.dfs.core.windows.net/t"
    )
    assert state_time_ms("1764370000000-abcdef012345") == 1764370000000
    assert state_time_ms("handmade") is None and state_time_ms("12-") is None


def test_a_replay_started_ahead_serves_one_reader_never_a_writer(s3: S3Server) -> None:
    """A plan's log read overlaps the table's: a reader takes it once; a writer replays afresh."""
    url = s3.url()
    store, other = ObjectIndexStore(url, s3.options), ObjectIndexStore(url, s3.options)
    store.commit([_define("a")], -1)
    store.read_log_ahead()
    other.commit([_define("b")], 0)  # lands after the replay started (or while it runs)
    early = store.read_log(strict=False)
    assert set(early.indexes) <= {"a", "b"} and "a" in early.indexes
    assert set(store.read_log(strict=False).indexes) == {"a", "b"}  # taken once only
    store.read_log_ahead()
    other.commit([_define("c")], 1)
    assert set(store.read_log(strict=True).indexes) == {"a", "b", "c"}  # a writer: afresh
    assert set(store.read_log(strict=False).indexes) == {"a", "b", "c"}  # not the stale one


def test_head_and_listing_together_still_find_a_lost_newest_commit(s3: S3Server) -> None:
    """Read at once, the head and the listing still report a commit the head names but the log lacks."""
    url = s3.url()
    store = ObjectIndexStore(url, s3.options)
    for v in range(3):
        store.commit([_define(f"i{v}")], v - 1)
    assert store.head_and_versions() == (2, [0, 1, 2])
    store.blobs.delete("_log/00000000000000000002.json")
    snap = store.read_log(strict=False)
    assert snap.version == 1 and set(snap.indexes) == {"i0", "i1"}
    assert snap.problems and "commit 2 was written" in snap.problems[0].reason


def test_two_writers_racing_for_a_version_one_wins(s3: S3Server) -> None:
    """Create-only commits: the loser of a race gets a conflict; retries lose no commit."""
    url = s3.url()
    first, second = ObjectIndexStore(url, s3.options), ObjectIndexStore(url, s3.options)
    assert first.commit([_define("a")], -1) == 0
    with pytest.raises(CommitConflictError, match="version 0 was committed by another writer"):
        second.commit([_define("b")], -1)
    assert set(second.read_log().indexes) == {"a"}

    # four writers, five commits each, all through the retrying commit: none lost
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        store = ObjectIndexStore(url, s3.options)
        try:
            for i in range(5):
                store.commit_with_retry(lambda _snap, n=n, i=i: [_define(f"w{n}_{i}")], 40)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    snap = first.read_log()
    assert snap.version == 20 and not snap.problems
    assert set(snap.indexes) == {"a"} | {f"w{n}_{i}" for n in range(4) for i in range(5)}
    assert first.head_hint() <= 20 and first.versions() == list(range(21))


class _Overwriting(LocalBlobs):
    """A store that says yes to every create and overwrites (no put-if-absent)."""

    def create(self, key: str, data: bytes) -> bool:
        self.put(key, data)
        return True


def test_a_store_without_create_only_writes_is_refused_untouched(tmp_path: Path) -> None:
    """The probe refuses it in one line before any commit; the log stays empty."""
    store = ObjectIndexStore("s3://lake/never", blobs=_Overwriting(tmp_path))
    with pytest.raises(CreateOnlyUnsupportedError) as info:
        store.commit([_define("a")], -1)
    assert "\n" not in str(info.value) and "create-only" in str(info.value)
    assert store.versions() == [] and not (tmp_path / "_log").exists()


def test_a_damaged_commit_reads_as_the_state_before_it(s3: S3Server) -> None:
    """A commit edited in place fails its checksum: readers get the state before it."""
    url = s3.url()
    store = ObjectIndexStore(url, s3.options)
    store.commit([_define("a")], -1)
    store.commit([_define("b")], 0)
    key = f"{url.split('/', 3)[3]}/_log/{1:020d}.json"
    body = s3.client().get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    s3.client().put_object(Bucket=s3.bucket, Key=key, Body=body.replace(b'"b"', b'"c"'))
    snap = store.read_log(strict=False)
    assert set(snap.indexes) == {"a"} and snap.problems and "checksum" in snap.problems[0].reason


@pytest.mark.spark
def test_explain_makes_few_requests_to_the_index_store(
    spark: Any, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planning a point query (Sieve and zone map) reads the store in at most 8 requests."""
    path = tmp_path / "t"
    for f in range(4):
        ids = [f + 4 * i for i in range(50)]
        deltalake.write_deltalake(str(path), pa.table({"id": ids}), mode="append")
    index_root = s3.url("idx")
    options = {f"storage.{k}": v for k, v in s3.options.items()}
    table = lakesieve.open(str(path), index_root=index_root, options=options)
    for kind in ("sieve", "zonemap"):
        table.build_index("id", type=kind, spark=spark)
    requests: list[tuple[str, str]] = []
    original = ObjectBlobs._request

    def counted(self: ObjectBlobs, what: str, key: str, call: Any) -> Any:
        requests.append((what, key))
        return original(self, what, key, call)

    monkeypatch.setattr(ObjectBlobs, "_request", counted)
    clear_file_cache()  # as a fresh process: nothing kept from the builds
    fresh = lakesieve.open(str(path), index_root=index_root, options=options)
    plan = fresh.explain("id = 9")
    assert plan["locations_selected"] == 1 and plan["locations_total"] == 4
    assert 1 <= len(requests) <= 8, requests
    assert any(key.startswith("data/") for _, key in requests)
    # a second plan in the process reads no data file again: verified bytes are kept
    requests.clear()
    assert (
        lakesieve.open(str(path), index_root=index_root, options=options).explain("id = 9")[
            "locations_selected"
        ]
        == 1
    )
    assert requests and not any(key.startswith("data/") for _, key in requests), requests

    # two builds of one name with different definitions, both declared before either
    # commits (the interleaving of a race): the second is refused, the first kept
    monkeypatch.setattr(ObjectBlobs, "_request", original)
    racing = lakesieve.open(str(path), index_root=index_root, options=options)
    first = declare_index(racing.states, "id", "sieve", name="raced")
    second = declare_index(racing.states, "id", "zonemap", name="raced")
    build_declared(racing.states, *first, spark=spark)
    with pytest.raises(ConcurrentBuildError, match="not kept"):
        build_declared(racing.states, *second, spark=spark)
    kept = lakesieve.open(str(path), index_root=index_root, options=options).index("raced")
    assert kept.type == "sieve"

    # the raced build's commit damaged in place: writers refuse, readers keep the rest;
    # repair appends a reset commit (nothing renamed) and every good index stays
    prefix = index_root.split("/", 3)[3]
    last = max(racing.store.versions())
    key = f"{prefix}/_log/{last:020d}.json"
    body = s3.client().get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    s3.client().put_object(Bucket=s3.bucket, Key=key, Body=body.replace(b'"sieve"', b'"bloom"'))
    damaged = lakesieve.open(str(path), index_root=index_root, options=options)
    with pytest.raises(IndexCorruptError, match="repair"):
        damaged.store.read_log()
    result = repair(damaged)
    assert result.indexes_dropped == ["raced"] and result.commits_skipped
    repaired = lakesieve.open(str(path), index_root=index_root, options=options)
    snap = repaired.store.read_log()
    assert set(snap.indexes) == {"id_sieve", "id_zonemap"} and snap.version == last + 1
    assert check_store(repaired)["ok"]
    assert repaired.explain("id = 9")["locations_selected"] == 1
    repaired.build_index("id", type="bloom", spark=spark)  # commits after the reset
    assert set(
        lakesieve.open(str(path), index_root=index_root, options=options).store.read_log().indexes
    ) == {
        "id_sieve",
        "id_zonemap",
        "id_bloom",
    }
