"""Requests, bytes and planning time of the index store on object storage, latency injected.

A Delta table of ``--files`` files (interleaved keys) on a local disk, its
index store on a moto S3 server on 127.0.0.1 (``index_root=s3://...``), Sieve
and zone map built on ``id``. For each read-side operation, in a fresh
``Table`` (as each CLI command is a fresh process), counts the requests the
store makes and the bytes it reads, then times ``explain`` of a point query
with ``--latency-ms`` added to every store request (a sleep before each, as a
far region or a busy store adds), against the same plan with no latency; cold
(a fresh process: no data file cached) and warm (a long-lived process such as
the Spark source's planner: verified data files kept by checksum).

    .venv/bin/python bench/object_store_requests.py [--files 16] [--latency-ms 20] [--reps 7]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    import deltalake
    import lakesieve
    from lakesieve.maintenance.repair import check_store
    from lakesieve.spark.session import get_spark
    from lakesieve.store.blobs import ObjectBlobs
    from lakesieve.store.object_index import clear_file_cache

    from tests.s3_server import moto_s3

    counted: list[tuple[str, str, int]] = []
    latency = [0.0]
    original = ObjectBlobs._request

    def request(self: ObjectBlobs, what: str, key: str, call: Callable[[bool], Any]) -> Any:
        if latency[0]:
            time.sleep(latency[0])
        out = original(self, what, key, call)
        size = len(out) if isinstance(out, bytes) else 0
        counted.append((what, key, size))
        return out

    ObjectBlobs._request = request  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp, moto_s3(process=True) as s3:
        path = Path(tmp) / "t"
        for f in range(args.files):
            ids = [f + args.files * i for i in range(1000)]
            deltalake.write_deltalake(str(path), pa.table({"id": ids}), mode="append")
        root = s3.url("idx")
        options = {f"storage.{k}": v for k, v in s3.options.items()}

        def fresh() -> Any:
            return lakesieve.open(str(path), index_root=root, options=options)

        spark = get_spark()
        out: dict[str, Any] = {"files": args.files, "latency_ms": args.latency_ms}
        steps: dict[str, Callable[[], Any]] = {
            "index build (sieve)": lambda: fresh().build_index("id", type="sieve", spark=spark),
            "index build (zonemap)": lambda: fresh().build_index("id", type="zonemap", spark=spark),
            "index list": lambda: fresh().indexes(),
            "explain (point)": lambda: fresh().explain("id = 9"),
            "query --engine arrow (point)": lambda: fresh().read_arrow(where="id = 9"),
            "index refresh (up to date)": lambda: fresh().refresh(spark=spark),
            "index check": lambda: check_store(fresh()),
            "index vacuum": lambda: fresh().vacuum(),
        }
        per: dict[str, Any] = {}
        for name, step in steps.items():
            clear_file_cache()  # each command is a fresh process
            counted.clear()
            step()
            per[name] = {
                "requests": len(counted),
                "reads": sum(1 for c in counted if c[0] == "read"),
                "lists": sum(1 for c in counted if c[0] == "list"),
                "writes": sum(1 for c in counted if c[0] not in ("read", "list")),
                "bytes_read": sum(c[2] for c in counted),
            }
        out["per_command"] = per
        times: dict[str, list[float]] = {"none": [], "injected": [], "injected, warm": []}
        for _ in range(args.reps):
            for mode in ("none", "injected", "injected, warm"):
                latency[0] = args.latency_ms / 1000 if mode != "none" else 0.0
                if mode != "injected, warm":
                    clear_file_cache()  # cold: a fresh process's first plan
                table = fresh()
                start = time.perf_counter()
                table.explain("id = 9")
                times[mode].append((time.perf_counter() - start) * 1000)
        latency[0] = 0.0
        out["explain_ms_median"] = {k: round(statistics.median(v), 1) for k, v in times.items()}
        out["explain_ms_added"] = {
            k: round(v - out["explain_ms_median"]["none"], 1)
            for k, v in out["explain_ms_median"].items()
            if k != "none"
        }
        spark.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
