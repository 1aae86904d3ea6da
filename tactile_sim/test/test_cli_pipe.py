"""The command line piped into a reader that stopped early (``tactile-sim check … | grep -q valid``): it ends with
the status a shell gives a C tool on SIGPIPE, without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tactile_sim.cli import BROKEN_PIPE_STATUS


@pytest.mark.parametrize("command", [["schema"], ["check", "package://tactile_sim/config/demo_sensors.yaml"]])
def test_a_reader_gone_before_the_output_ends_the_command_quietly(command):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone (grep -q matched, head has its lines): every write meets EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "tactile_sim", *command], stdout=write_end,
                              stderr=subprocess.PIPE, env=env, timeout=120)
    finally:
        os.close(write_end)
    stderr = done.stderr.decode()
    assert done.returncode == BROKEN_PIPE_STATUS, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
