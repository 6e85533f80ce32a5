"""Run mypy over the ``lakesieve`` package laid out the way Python imports it.

The source tree maps ``framework/`` to ``lakesieve``, ``plugins/`` to
``lakesieve.plugins`` and ``indexes/`` to ``lakesieve.indexes`` (the
package-dir table of pyproject.toml). mypy finds modules by folder names, so
run on those folders it cannot resolve ``import lakesieve.x`` and reads every
such name as ``Any``: a call from one module into another would go
unchecked. This script lays the package out from symbolic links in a
temporary folder, runs mypy there with the project's configuration (so the
strict overrides for ``lakesieve.contract.protocols`` and ``lakesieve.expressions``
apply by module name), with the benchmarks' package ``bench/lakesieve_bench``
beside it, and prints the report with the repository's paths::

    .venv/bin/python tests/mypy_package.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Package folder -> source folder, longest first so that paths map back exactly.
LAYOUT = (("plugins", ROOT / "plugins"), ("indexes", ROOT / "indexes"), ("", ROOT / "framework"))
#: The benchmarks' package (its own distribution, ``bench/``), checked beside lakesieve.
BENCH = ROOT / "bench" / "lakesieve_bench"


def link_package(parent: Path) -> Path:
    """Build ``parent/lakesieve`` from symbolic links to the source folders; return it."""
    package = parent / "lakesieve"
    package.mkdir()
    for entry in (ROOT / "framework").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, source in LAYOUT[:-1]:
        (package / name).symlink_to(source)
    return package


def run() -> tuple[int, str]:
    """mypy's exit status and its report, with paths of the repository."""
    with tempfile.TemporaryDirectory(prefix="lakesieve-mypy-") as tmp:
        package = link_package(Path(tmp))
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                str(ROOT / "pyproject.toml"),
                "--cache-dir",
                str(ROOT / ".mypy_cache" / "package"),
                str(package),
                str(BENCH),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        report = proc.stdout + proc.stderr
        for name, source in LAYOUT:
            linked = f"{package}/{name}/" if name else f"{package}/"
            report = report.replace(linked, f"{source.relative_to(ROOT)}/")
        return proc.returncode, report


if __name__ == "__main__":
    status, text = run()
    print(text, end="")
    sys.exit(status)
