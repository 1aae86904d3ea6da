"""The README's Python example runs as written and gives a physically sensible reading."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_python_api_example_runs(capsys):
    if not README.is_file():  # tests run from an installed copy without the repository
        import pytest

        pytest.skip(f"README.md not found at {README}")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    total = namespace["truth"][..., 2].sum()
    assert total < 0  # pressing pushes the pad skin down (−z, into the sensor)
    assert namespace["force"].shape == (16, 16, 3)
    assert "total normal force" in capsys.readouterr().out
