"""Racing writers on an index store on object storage, for a minute, beside a reader.

A Delta table written by delta-rs on a moto S3 server on 127.0.0.1, its
index store beside it (Sieve and zone map on ``id``). Four writer
processes run at once for ``LAKESIEVE_S3_RACE_SECONDS`` (60 by default):

- *change*: a delta-rs append or delete, then ``refresh``;
- *refresh* and *refresh-2*: ``refresh`` then ``compact`` (every delta
  folded), racing each other for the same commits;
- *vacuum*: ``vacuum`` (default grace) then ``index check``.

Every create-only write of a commit that succeeds is recorded by its writer
(object key and SHA-256 of the bytes). Meanwhile this process reads at the
table's newest version on the Arrow path (and every fourth query through
Spark). Afterwards:

- no commit is lost: every recorded commit is still in the log with the
  bytes its writer wrote, the log replays without a problem and
  ``index check`` passes;
- no wrong row: every answer equals delta-rs's read of that version filtered
  by Spark SQL;
- a writer's failure is only a lost race told in one line
  (:class:`~lakesieve.errors.CommitConflictError` after its retries).

Long tier: a minute of races plus the set-up.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.conftest import S3A_JARS, child_spark_env
from tests.s3_server import S3Server, moto_s3
from tests.tables import spark_where

SECONDS = float(os.environ.get("LAKESIEVE_S3_RACE_SECONDS", "60"))
FILES = 8
ROWS_PER_FILE = 40
WHERES = ("id = 37", "id IN (5, 300)", "id BETWEEN 100 AND 103", "id >= 1000")
#: two refreshers race for the same commits, as two schedulers would
ROLES = ("change", "refresh", "refresh-2", "vacuum")


def race_writer(url: str, role: str, stop: str, report: str) -> None:
    """One writer process: rounds of its role until ``stop`` exists; a JSON line per step."""
    import deltalake
    import lakesieve
    from lakesieve.errors import CommitConflictError
    from lakesieve.maintenance.refresh import RefreshPolicy
    from lakesieve.maintenance.repair import check_store
    from lakesieve.store.blobs import ObjectBlobs

    options = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    out = open(report, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole run

    def note(**kw: Any) -> None:
        out.write(json.dumps({"t": time.time(), "role": role, **kw}) + "\n")
        out.flush()

    created = ObjectBlobs.create

    def create(self: ObjectBlobs, key: str, data: bytes) -> bool:
        done = created(self, key, data)
        if "/_log/" in f"/{key}" and key.endswith(".json"):
            if done:
                note(step="commit", key=key, sha=hashlib.sha256(data).hexdigest())
            else:  # another writer had created it: this one re-reads the log and retries
                note(step="lost race", key=key)
        return done

    ObjectBlobs.create = create  # type: ignore[method-assign]
    policy = RefreshPolicy(max_deltas=3)
    note(step="start")
    rounds = 0
    while not os.path.exists(stop):
        rounds += 1
        try:
            table = lakesieve.open(url)
            if role == "change":
                n = 1000 + rounds
                if rounds % 3 == 0:
                    deltalake.DeltaTable(url, storage_options=options).delete(f"id = {n - 2}")
                else:
                    rows = pa.table({"id": [n, 37, 5 + 16 * rounds], "s": [f"c{rounds}"] * 3})
                    deltalake.write_deltalake(url, rows, mode="append", storage_options=options)
                note(step="changed")
                table = lakesieve.open(url)
                note(step="refresh", actions=[r.action for r in table.refresh(policy=policy)])
            elif role.startswith("refresh"):
                note(step="refresh", actions=[r.action for r in table.refresh(policy=policy)])
                folded = table.compact(policy=RefreshPolicy(max_deltas=0))
                note(step="compact", actions=[r.action for r in folded])
            else:
                note(step="vacuum", removed=len(table.vacuum().states_removed))
                note(step="check", ok=check_store(lakesieve.open(url))["ok"])
        except CommitConflictError as exc:  # a race lost after every retry: one line
            note(step="conflict", error=str(exc))
        time.sleep(0.05)
    note(step="done", rounds=rounds)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with moto_s3(process=True) as server:
        yield server


def _steps(reports: list[Path]) -> list[dict[str, Any]]:
    out = []
    for report in reports:
        if report.exists():
            out += [json.loads(line) for line in report.read_text().splitlines() if line]
    return out


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_four_writers_racing_for_a_minute_lose_no_commit_and_no_row(
    spark: Any, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers race on the S3 store while a reader reads: no commit lost, every answer delta-rs's."""
    import deltalake
    import lakesieve
    from lakesieve.maintenance.repair import check_store

    if not S3A_JARS:
        pytest.skip("no s3 connector: run .ci/fetch-s3a (hadoop-aws and the AWS SDK bundle)")
    for key, value in s3.options.items():
        monkeypatch.setenv(key, value)
    url = s3.url("race/events")
    for f in range(FILES):
        ids = [f + FILES * i for i in range(ROWS_PER_FILE)]
        rows = pa.table({"id": ids, "s": [f"v{i}" for i in ids]})
        deltalake.write_deltalake(url, rows, mode="append", storage_options=s3.options)
    reader = lakesieve.open(url)
    for kind in ("sieve", "zonemap"):
        reader.build_index("id", type=kind, spark=spark)

    stop = tmp_path / "stop"
    reports = [tmp_path / f"{role}.jsonl" for role in ROLES]
    env = child_spark_env({**os.environ, **s3.options, "LAKESIEVE_SPARK_MASTER": "local[1]"})
    code = "import sys; from tests.object_storage.test_object_storage_races import race_writer; race_writer(*sys.argv[1:])"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, url, role, str(stop), str(report)],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / f"{role}.err").open("w"),
        )
        for role, report in zip(ROLES, reports, strict=True)
    ]
    answers: list[tuple[int, str, str, list[tuple[Any, ...]]]] = []
    try:
        while sum(s["step"] == "start" for s in _steps(reports)) < len(ROLES):
            assert all(p.poll() is None for p in procs), "a writer died before it started"
            time.sleep(0.2)
        started = time.monotonic()
        # the race runs its time, and on a loaded machine on until ten reads were made
        while time.monotonic() - started < SECONDS or (
            len(answers) < 10 and time.monotonic() - started < 4 * SECONDS
        ):
            version = deltalake.DeltaTable(url, storage_options=s3.options).version()
            where = WHERES[len(answers) % len(WHERES)]
            table = lakesieve.open(url)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if len(answers) % 4 == 3:
                    frame = table.read(spark, where=where, as_of=str(version))
                    got = sorted(tuple(r) for r in frame.select("id", "s").collect())
                    path = "spark"
                else:
                    rows = table.read_arrow(where=where, as_of=str(version))
                    got = sorted(zip(rows["id"].to_pylist(), rows["s"].to_pylist(), strict=True))
                    path = "arrow"
            answers.append((version, where, path, got))
    finally:
        stop.touch()
        for p in procs:
            try:
                p.wait(120)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    errors = {role: (tmp_path / f"{role}.err").read_text()[-3000:] for role in ROLES}
    assert [p.returncode for p in procs] == [0] * len(ROLES), errors
    steps = _steps(reports)
    done = {s["role"]: s["rounds"] for s in steps if s["step"] == "done"}
    assert set(done) == set(ROLES), steps[-5:]

    # no commit lost: each one a writer created is in the log with its bytes
    commits = [s for s in steps if s["step"] == "commit"]
    client = s3.client()
    prefix = url.split("/", 3)[3] + "/.lakesieve/"
    for c in commits:
        body = client.get_object(Bucket=s3.bucket, Key=prefix + c["key"])["Body"].read()
        assert hashlib.sha256(body).hexdigest() == c["sha"], c["key"]
    keys = [c["key"] for c in commits]
    assert len(keys) == len(set(keys)), "two writers both created one commit"
    final = lakesieve.open(url)
    log = final.store.read_log()
    assert not log.problems and log.version + 1 >= len(commits)
    report = check_store(final)
    assert report["ok"], report

    # every answer equals delta-rs's rows of that version, filtered by Spark SQL
    native: dict[int, pa.Table] = {}
    for version, where, path, got in answers:
        if version not in native:
            native[version] = deltalake.DeltaTable(
                url, storage_options=s3.options, version=version
            ).to_pyarrow_table()
        want = sorted(
            tuple(r) for r in spark_where(spark, native[version], where).select("id", "s").collect()
        )
        assert got == want, (path, where, version)

    # the race raced: changes, refreshes, compactions and vacuums, several versions read
    by_step = {s["step"] for s in steps}
    assert {"changed", "refresh", "compact", "vacuum", "check"} <= by_step
    assert all(s["ok"] for s in steps if s["step"] == "check")
    assert len({a[0] for a in answers}) >= 3 and len(answers) >= 10
    conflicts = [s for s in steps if s["step"] == "conflict"]
    retried = sum(s["step"] == "lost race" for s in steps)
    assert all("\n" not in s["error"] for s in conflicts)
    print(
        f"\n{len(answers)} reads at {len({a[0] for a in answers})} versions; "
        f"{len(commits)} commits ({retried} creates lost to another writer and retried); "
        f"rounds {done}; {len(conflicts)} writers' races lost after every retry"
    )
