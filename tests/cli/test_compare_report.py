"""The ``lakesieve compare`` report, ``advise --from-json`` and the clean-up of ``cmp_*`` indexes.

The report is parsed with the standard library's ``html.parser``; the
figures come from a real compare run on a real Hudi table.
"""

from __future__ import annotations

import base64
import json
import os
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.cli import main
from lakesieve.config import load_config
from lakesieve.measure.advise import advise, parse_workload, toml_fragment
from lakesieve.measure.compare import compare_indexes
from lakesieve.measure.compare_report import render_html, write_html

from tests.tables import make_rows, write_rows

pytestmark = pytest.mark.spark

TYPES = ["sieve", "zonemap", "bloom", "exact"]


class _Page(HTMLParser):
    """Collects what the tests look at: tags, attributes, section texts, the JSON block."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.sections: list[str] = []
        self.text: dict[str, str] = {}
        self.dts: list[str] = []
        self.json_text = ""
        self._section: str | None = None
        self._in_dt = False
        self._in_json = False
        self._details = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        for name, value in attrs:
            self.attrs.append((tag, name, value or ""))
        if tag == "section":
            self._section = values.get("id") or ""
            self.sections.append(self._section)
            self.text.setdefault(self._section, "")
        elif tag == "details":
            self._details += 1
        elif tag == "dt":
            self._in_dt = True
            self.dts.append("")
        elif tag == "pre" and values.get("id") == "figures-json":
            assert self._details, "the JSON is not inside <details>"
            self._in_json = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._section = None
        elif tag == "details":
            self._details -= 1
        elif tag == "dt":
            self._in_dt = False
        elif tag == "pre":
            self._in_json = False

    def handle_data(self, data: str) -> None:
        if self._section is not None:
            self.text[self._section] += data
        if self._in_dt:
            self.dts[-1] += data
        if self._in_json:
            self.json_text += data


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


@pytest.fixture(scope="module")
def cmp_path(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "t"
    write_rows(spark, path, make_rows(range(0, 900), 5), mode="bulk_insert", file_groups=6)
    return path


@pytest.fixture(scope="module")
def result(spark: Any, cmp_path: Path) -> dict[str, Any]:
    return compare_indexes(
        lakesieve.open(cmp_path), "k", types=TYPES, queries=8, seed=3, spark=spark, e2e=False
    )


def test_report_is_one_self_contained_file(result: dict[str, Any], tmp_path: Path) -> None:
    written = write_html(result, tmp_path / "out" / "report.html")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.html"]
    page = parse(written.read_text(encoding="utf-8"))
    images = [v for tag, name, v in page.attrs if tag == "img" and name == "src"]
    assert len(images) == 1 + len(result["types"]["exact"]["selected"])  # trade-off + per kind
    for src in images:
        head, sep, data = src.partition(",")
        assert head == "data:image/png;base64" and sep
        assert base64.b64decode(data, validate=True)[:8] == b"\x89PNG\r\n\x1a\n"
    # nothing is fetched: no src names a file or URL, every link stays in the page
    assert all(v.startswith("data:") for _, name, v in page.attrs if name == "src")
    assert all(v.startswith("#") for _, name, v in page.attrs if name == "href")
    assert "link" not in page.tags and "script" not in page.tags


def test_report_opens_with_the_recommendation(result: dict[str, Any]) -> None:
    page = parse(render_html(result))
    assert page.sections[0] == "recommendation"
    advice = advise(result, parse_workload(None))
    first = page.text["recommendation"]
    assert advice["type"] in TYPES and f"Keep a {advice['type']} index on column k" in first
    assert advice["reason"] in first
    assert "Assumed workload: point=0.60, range_0.1pct=0.30, in=0.10 (the default mix" in first
    assert "--from-json" in first and "--workload" in first
    assert page.sections.index("tradeoff") == 1
    for section in ("kinds", "figures", "glossary", "parameters", "json"):
        assert section in page.sections


def test_report_for_a_stated_workload(result: dict[str, Any]) -> None:
    workload = parse_workload("range_1pct=1")
    page = parse(render_html(result, workload))
    advice = advise(result, workload)
    assert advice["type"] != "bloom"  # a Bloom filter answers all locations for ranges
    assert f"Keep a {advice['type']} index" in page.text["recommendation"]
    assert "range_1pct=1.00 (given with --workload)" in page.text["recommendation"]


def test_glossary_names_every_kind_and_answers_all_is_said(result: dict[str, Any]) -> None:
    page = parse(render_html(result))
    kinds = {k for fig in result["types"].values() for k in fig["selected"]}
    assert kinds >= {"point", "in", "range_low", "range_high"}
    assert kinds <= set(page.dts)
    for kind in kinds:  # each one defined by a sentence, not just named
        assert f"{kind}a " in page.text["glossary"] or f"{kind}an " in page.text["glossary"]
    assert "Answers all locations (no pruning): bloom." in page.text["kinds"]


def test_json_in_details_round_trips(result: dict[str, Any]) -> None:
    page = parse(render_html(result))
    assert json.loads(page.json_text) == json.loads(json.dumps(result))


def test_every_text_is_escaped(result: dict[str, Any]) -> None:
    hostile = json.loads(json.dumps(result))
    hostile["table"] = "/tmp/<script>alert(1)</script>"
    hostile["examples"]["point"] = "k = '<img src=x>'"
    text = render_html(hostile)
    page = parse(text)
    assert "script" not in page.tags
    assert not [v for tag, name, v in page.attrs if name == "src" and not v.startswith("data:")]
    assert "/tmp/<script>alert(1)</script>" in page.text["parameters"]
    assert "k = '<img src=x>'" in page.text["glossary"]


def test_advise_from_json_reuses_the_figures(
    result: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saved = tmp_path / "cmp.json"
    saved.write_text(json.dumps(result), encoding="utf-8")

    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("advise --from-json measured again")

    monkeypatch.setattr("lakesieve.measure.compare.compare_indexes", refuse)
    monkeypatch.setattr("lakesieve.spark.session.get_spark", refuse)
    for mix in ("point=0.6,range_0.1pct=0.3,in=0.1", "range_low=1", "in=2,range_1pct=1"):
        assert main(["advise", "--from-json", str(saved), "--workload", mix]) == 0
        want = advise(result, parse_workload(mix))
        assert capsys.readouterr().out == want["reason"] + "\n"
    assert main(["advise", "--from-json", str(saved), "--types", "bloom,zonemap"]) == 0
    only = {t: result["types"][t] for t in ("bloom", "zonemap")}
    want = advise({**result, "types": only}, parse_workload(None))
    assert capsys.readouterr().out == want["reason"] + "\n"


def test_printed_toml_loads_as_is(
    result: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "cmp.json"
    saved.write_text(json.dumps(result), encoding="utf-8")
    assert main(["advise", "--from-json", str(saved), "--toml", "--table-name", "my t"]) == 0
    elsewhere = tmp_path / "conf" / "lakesieve.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(capsys.readouterr().out, encoding="utf-8")
    config = load_config(elsewhere)
    advice = advise(result, parse_workload(None))
    (table,) = config.tables
    assert table.name == "my t" and table.path == result["table"]
    assert table.format == result["format"]
    assert [(i.column, i.type) for i in table.indexes] == [("k", advice["type"])]
    # no index recommended: the table is still declared, with no index
    none = tmp_path / "none.toml"
    none.write_text(toml_fragment("t", {**advice, "type": None}), encoding="utf-8")
    assert load_config(none).tables[0].indexes == ()


def test_advise_bad_input_is_one_line(
    result: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({k: v for k, v in result.items() if k != "types"}))
    notjson = tmp_path / "bad.json"
    notjson.write_text("{nope")
    saved = tmp_path / "cmp.json"
    saved.write_text(json.dumps(result))
    cases = [
        (["--from-json", str(tmp_path / "missing.json")], "file not found"),
        (["--from-json", str(notjson)], "not JSON"),
        (["--from-json", str(partial)], "no 'types'"),
        (["--from-json", str(saved), "--column", "s"], "--column 's' differs"),
        (["--from-json", str(saved), "--types", "sieve,nope"], "'nope' is not in"),
        ([], "advise needs TABLE and --column, or --from-json FILE"),
    ]
    for argv, words in cases:
        assert main(["advise", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, (argv, err)


def _cmp_folders(path: Path) -> list[str]:
    data = lakesieve.open(path).store.data_dir
    return (
        sorted(p.name for p in data.iterdir() if p.name.startswith("cmp_")) if data.is_dir() else []
    )


def test_compare_leaves_no_cmp_folder(result: dict[str, Any], cmp_path: Path) -> None:
    assert result["kept_indexes"] == []
    assert _cmp_folders(cmp_path) == []
    assert not [d for d in lakesieve.open(cmp_path).indexes() if d.name.startswith("cmp_")]


def test_compare_cleans_up_when_a_build_fails(
    spark: Any, cmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that wrote its files but failed to commit, and a failure after a committed build."""
    import lakesieve.maintenance.index_build as index_build

    def fail(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("injected failure before the commit")

    with monkeypatch.context() as m:
        m.setattr(index_build, "add_state_action", fail)
        with pytest.raises(RuntimeError, match="before the commit"):
            compare_indexes(
                lakesieve.open(cmp_path), "k", types=["zonemap"], queries=2, spark=spark
            )
    assert _cmp_folders(cmp_path) == []

    def fail_lookup(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("injected failure after the build")

    with monkeypatch.context() as m:
        m.setattr("lakesieve.measure.compare.evaluate", fail_lookup)
        with pytest.raises(RuntimeError, match="after the build"):
            compare_indexes(
                lakesieve.open(cmp_path), "k", types=["zonemap"], queries=2, spark=spark
            )
    assert _cmp_folders(cmp_path) == []
    assert not [d for d in lakesieve.open(cmp_path).indexes() if d.name.startswith("cmp_")]


def test_vacuum_removes_only_empty_cmp_folders_inside_the_root(
    cmp_path: Path, tmp_path: Path
) -> None:
    table = lakesieve.open(cmp_path)
    data = table.store.data_dir
    old = 1_000_000_000  # 2001: older than any grace period
    empty = data / "cmp_k_sieve"
    emptied = data / "cmp_k_bloom" / "0-orphan"  # an orphan state: removed, then its folder
    busy = data / "cmp_k_exact"
    fresh = data / "cmp_k_zonemap"
    plain = data / "mine"
    for folder in (empty, emptied, busy, fresh, plain):
        folder.mkdir(parents=True)
    (busy / "keep.txt").write_text("not a state folder, not empty")
    (emptied / "blocks.arrow").write_bytes(b"left by a killed build")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, data / "cmp_k_link")
    for item in (emptied / "blocks.arrow", empty, emptied, emptied.parent, busy, plain):
        os.utime(item, (old, old))

    first = table.vacuum(grace_seconds=3600)
    assert first.empty_folders_removed == ["cmp_k_bloom", "cmp_k_sieve"]
    assert first.orphan_folders_removed == ["cmp_k_bloom/0-orphan"]
    assert not empty.exists() and not emptied.parent.exists()
    assert fresh.is_dir() and busy.is_dir() and plain.is_dir()  # too new, not empty, not cmp_*
    assert (busy / "keep.txt").exists() and outside.is_dir()
    assert (data / "cmp_k_link").is_symlink()

    second = table.vacuum(grace_seconds=0)
    assert second.empty_folders_removed == ["cmp_k_zonemap"]
    assert busy.is_dir() and plain.is_dir() and outside.is_dir()
    assert (data / "cmp_k_link").is_symlink()
    assert "empty_folders_removed" in second.to_dict()


def test_compare_cli_states_the_workload_it_assumed(
    result: dict[str, Any],
    cmp_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command's wiring, on the figures of the real run above (not measured again)."""
    monkeypatch.setattr("lakesieve.cli.measure._compare_figures", lambda _args: result)
    base = ["compare", str(cmp_path), "--column", "k"]
    assert main([*base, "--html", str(tmp_path / "a.html"), "--advise"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f"recommendation: {advise(result, parse_workload(None))['reason']}\n")
    page = parse((tmp_path / "a.html").read_text(encoding="utf-8"))
    assert "(the default mix; no --workload was given)" in page.text["recommendation"]
    assert main([*base, "--html", str(tmp_path / "b.html"), "--workload", "range_low=1"]) == 0
    page = parse((tmp_path / "b.html").read_text(encoding="utf-8"))
    assert "range_low=1.00 (given with --workload)" in page.text["recommendation"]
    assert main([*base, "--workload", "nope=1"]) == 2
    assert "bad workload item 'nope=1'" in capsys.readouterr().err
