"""The full suite's figures stated against its targets: correctness, targets met, a text summary."""

from __future__ import annotations

import io
from typing import Any


def correctness(out: dict[str, Any]) -> dict[str, Any]:
    """Every false negative and every pruned read that differs from its full scan, over the run."""
    false_neg = []
    reads = unequal = 0
    bad: list[str] = []
    for layout, lay in out["layouts"].items():
        if lay.get("error"):
            bad.append(f"{layout}: the layout failed ({lay['error']})")
        for col, c in lay.get("columns", {}).items():
            for t, f in c["types"].items():
                if f["false_negatives"]:
                    false_neg.append(f"{layout} {col} {t}: {f['false_negatives']}")
        for fmt, res in lay["formats"].items():
            if res.get("layout_check") == "DIFFERENT":
                bad.append(f"{layout} {fmt}: buckets differ from the first format")
            for c in res.get("reads", []):
                arrow = c.get("arrow") or {}
                for name, r in [
                    *c["indexes"].items(),
                    ("native", c["native"]),
                    ("sieve_product", c.get("sieve_product")),
                    ("arrow_lakesieve", arrow.get("lakesieve")),
                    ("arrow_native", arrow.get("native")),
                ]:
                    if r is None:
                        continue
                    reads += 1
                    if not r["equal"]:
                        unequal += 1
                        bad.append(f"{layout} {fmt} {c['column']} {c['kind']} {name}")
    return {
        "false_negatives": false_neg,
        "pruned_reads_compared": reads,
        "pruned_reads_unequal": unequal,
        "problems": bad,
        "ok": not false_neg and unequal == 0 and not bad,
    }


def targets(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Where each of the issue's targets stands in this run."""
    res: list[dict[str, Any]] = []
    inter = out["layouts"].get("interleaved")
    col = inter.get("columns", {}).get("l_orderkey") if inter else None
    types = col["types"] if col else {}
    if "sieve" in types and "exact" in types:
        s, e = types["sieve"], types["exact"]
        ratio = s["selected"]["point"] / max(e["selected"]["point"], 1e-9)
        share = s["size_bytes"] / max(1, e["size_bytes"])
        res.append(
            {
                "target": "interleaved, l_orderkey points: Sieve within 1.2x of exact's locations at <= 2% of exact's bytes",
                "measured": f"{ratio:.3f}x of exact's locations at {100 * share:.2f}% of exact's bytes",
                "met": ratio <= 1.2 and share <= 0.02,
            }
        )
    if "sieve" in types and col and col.get("column_compressed_bytes"):
        share = types["sieve"]["size_bytes"] / col["column_compressed_bytes"]
        res.append(
            {
                "target": "Sieve size on interleaved below 1% of the key column's compressed size",
                "measured": f"{100 * share:.3f}% ({types['sieve']['size_bytes']} of {col['column_compressed_bytes']} bytes)",
                "met": share < 0.01,
            }
        )
    if inter:
        for fmt, r in inter["formats"].items():
            for c in r.get("reads", []):
                if c["column"] != "l_orderkey" or c["kind"] not in ("point", "range_0.01pct"):
                    continue
                p = c.get("sieve_product") or c["indexes"].get("sieve")
                if p is None:
                    continue
                floor = r.get("spark_action_floor_seconds")
                cap = (
                    f"; a one-row Spark aggregate took {floor} s here, the full scan "
                    f"{c['full_scan_seconds'] / max(floor, 1e-9):.1f}x that"
                    if floor
                    else ""
                )
                res.append(
                    {
                        "target": f"{fmt} interleaved {c['kind']}, Spark read: Sieve >= 10x faster than a Spark full scan and >= 5x than native statistics (read with Spark)",
                        "measured": f"{p['speedup_vs_full']}x vs full scan, {p['speedup_vs_native']}x vs native{cap}",
                        "met": p["speedup_vs_full"] >= 10 and p["speedup_vs_native"] >= 5,
                    }
                )
                a = (c.get("arrow") or {}).get("lakesieve")
                if a is None:
                    continue
                res.append(
                    {
                        "target": f"{fmt} interleaved {c['kind']}, Arrow read on the driver (Table.read_arrow): >= 10x faster than a Spark full scan and >= 5x than native statistics read with Spark",
                        "measured": f"{a['speedup_vs_spark_full']}x vs Spark full scan, {a['speedup_vs_spark_native']}x vs native+Spark",
                        "met": a["speedup_vs_spark_full"] >= 10
                        and a["speedup_vs_spark_native"] >= 5,
                    }
                )
                res.append(
                    {
                        "target": f"{fmt} interleaved {c['kind']}, same engine (Arrow vs Arrow): >= 10x faster than an Arrow full scan and >= 5x than native statistics + the same Arrow scan",
                        "measured": f"{a['speedup_vs_arrow_full']}x vs Arrow full scan, {a['speedup_vs_arrow_native']}x vs native+Arrow",
                        "met": a["speedup_vs_arrow_full"] >= 10
                        and a["speedup_vs_arrow_native"] >= 5,
                    }
                )
    if col and "sieve" in types:
        res.append(
            {
                "target": "Sieve build at most 2x a Spark sort of the key column (interleaved, l_orderkey, from the cached relation)",
                "measured": f"{types['sieve']['build_over_sort']}x ({types['sieve']['build_seconds']} s vs {col['spark_sort_seconds']} s)",
                "met": types["sieve"]["build_over_sort"] <= 2.0,
            }
        )
    ok = correctness(out)
    res.append(
        {
            "target": "no layout and no index type returns a row a full scan would not, or misses one",
            "measured": (
                f"{len(ok['false_negatives'])} index answers missing a true location; "
                f"{ok['pruned_reads_unequal']} of {ok['pruned_reads_compared']} pruned reads unequal to full scans"
            ),
            "met": ok["ok"],
        }
    )
    return res


def to_text(out: dict[str, Any]) -> str:
    """A short readable summary (the JSON holds everything)."""
    buf = io.StringIO()
    buf.write(f"full suite, SF {out['scale']}, {out.get('wall_seconds')} s\n")
    for t in out.get("targets", []):
        buf.write(f"  [{'met' if t['met'] else 'NOT met'}] {t['target']}: {t['measured']}\n")
    return buf.getvalue()
