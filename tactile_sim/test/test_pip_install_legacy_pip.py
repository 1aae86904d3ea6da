"""The README's pip path with an older pip: in a fresh venv with pip 23.0.1 and no ``wheel`` (Debian 12's), ``pip
install --no-deps ./tactile_sim`` builds a wheel through pyproject.toml's build system and puts the ``tactile-sim``
script in the venv's bin, not in lib/tactile_sim where setup.cfg's ROS 2 install_scripts would put it. Skipped where
pip 23.0.1 cannot be installed (no package index reachable)."""

import shutil
import subprocess
import venv
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
OLD_PIP = "pip==23.0.1"


def pip(env: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(env / "bin" / "python"), "-m", "pip", *args], capture_output=True, text=True,
                          timeout=300)


def test_old_pip_without_wheel_puts_the_script_on_path(tmp_path):
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    upgrade = pip(env, "install", "--quiet", OLD_PIP)
    if upgrade.returncode != 0:
        pytest.skip(f"cannot install {OLD_PIP}: {upgrade.stderr.strip()[-300:]}")
    pip(env, "uninstall", "--yes", "wheel")
    assert pip(env, "show", "wheel").returncode != 0, "wheel must be absent: that is when pip took the legacy path"
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "test"))
    install = pip(env, "install", "--no-deps", str(source))
    assert install.returncode == 0, install.stderr
    assert "legacy" not in install.stdout + install.stderr
    assert (env / "bin" / "tactile-sim").is_file()
    assert not (env / "lib" / "tactile_sim").exists()
