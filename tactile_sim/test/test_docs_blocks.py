"""Every ```python and ```bash block of the documentation (docs/**/*.md and README.md) runs as written.

Python blocks run alone, each in a fresh namespace, in a temporary working directory. Bash blocks run with
``bash -euo pipefail`` in a temporary directory, with ``REPO`` set to the repository root and the package of this
checkout first on ``PYTHONPATH`` (so ``python -m tactile_sim`` and ``tactile-sim`` run this code). A block that
cannot run here (it installs packages, or needs ROS 2 or a GPU) is preceded by an HTML comment
``<!-- not run: <reason> -->``; the reason is required.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(?:<!--\s*not run:(?P<reason>[^>]*)-->\s*\n)?^```(?P<lang>python|bash)\n(?P<code>.*?)^```",
                   re.S | re.M)


def doc_pages() -> list[Path]:
    pages = sorted((REPO / "docs").rglob("*.md")) if (REPO / "docs").is_dir() else []
    return pages + ([REPO / "README.md"] if (REPO / "README.md").is_file() else [])


def blocks() -> list[tuple[str, str, str, str]]:
    """(id, language, code, not-run reason or None) of every python / bash block."""
    found = []
    for page in doc_pages():
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("code"))
            found.append((f"{page.relative_to(REPO)}:{line}", m["lang"], m["code"], m["reason"]))
    return found


BLOCKS = blocks()
RUN = [b for b in BLOCKS if b[3] is None]


def test_the_docs_have_blocks_and_every_skipped_block_says_why():
    if not doc_pages():
        pytest.skip("the documentation is not beside this copy of the tests")
    assert len(RUN) >= 10
    for ident, _, _, reason in BLOCKS:
        assert reason is None or reason.strip(), f"{ident}: a not-run block needs a reason"


def _env() -> dict:
    env = dict(os.environ, REPO=str(REPO), OMP_NUM_THREADS="1")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


@pytest.mark.parametrize("ident, lang, code", [b[:3] for b in RUN], ids=[b[0] for b in RUN])
def test_block_runs(ident, lang, code, tmp_path, monkeypatch):
    if lang == "python":
        monkeypatch.chdir(tmp_path)
        exec(compile(code, ident, "exec"), {"__name__": "__docs__"})
        return
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{ident} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
