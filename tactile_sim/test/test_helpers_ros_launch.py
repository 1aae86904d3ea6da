"""The launch tests' scratch folder: importing their helpers (as ``pytest --collect-only`` does) creates nothing, and
the folder made for a generated configuration is gone once the process exits."""

import os
import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).parent


def run_in_temp(tmp_path: Path, code: str) -> str:
    """Run ``code`` in a fresh interpreter whose temporary folder is ``tmp_path``; its stdout."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TEST_DIR), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=TEST_DIR, check=True, capture_output=True,
                          text=True).stdout


def test_importing_the_helpers_creates_no_folder(tmp_path):
    run_in_temp(tmp_path, "import helpers_ros_launch")
    assert list(tmp_path.iterdir()) == []


def test_the_generated_configuration_is_removed_at_exit(tmp_path):
    out = run_in_temp(tmp_path, "import helpers_ros_launch as h\n"
                                "path = h.edited_demo('x.yaml', lambda data: None)\n"
                                "print(path.is_file(), path.parent.parent)")
    assert out.split() == ["True", str(tmp_path)]
    assert list(tmp_path.iterdir()) == []
