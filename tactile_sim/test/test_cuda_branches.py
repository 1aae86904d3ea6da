"""The CUDA-only branches whose logic can be checked on a CPU-only machine: device selection, host views taken only of
CPU tensors, env-0 copies for publishing, explicit CUDA indices for Warp."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tactile_sim.cli.common import check_device
from tactile_sim.errors import ConfigError
from tactile_sim.geometry.struct_launch import warp_device
from tactile_sim.ros.sensor_encoders import HostRows
from tactile_sim.suite import resolve_device


class OnAnotherDevice(torch.Tensor):
    """A CPU tensor that reports it is not on the CPU (what a CUDA tensor reports), to drive the non-CPU branch."""

    @property
    def is_cpu(self) -> bool:
        return False


@pytest.mark.parametrize("available, expected", [(True, "cuda"), (False, "cpu")])
def test_auto_picks_cuda_only_when_available(monkeypatch, available, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2 if available else 0)
    assert resolve_device("auto") == torch.device(expected)
    assert resolve_device("cpu") == torch.device("cpu")
    if available:
        assert resolve_device("cuda:1") == torch.device("cuda", 1)
    refused, have = ("cuda:2", "CUDA devices 0 to 1") if available else ("cuda:1", "no CUDA device")
    with pytest.raises(ConfigError, match=rf"x.yaml:suite.device: this machine has {have}; got '{refused}'"):
        resolve_device(refused, "x.yaml:suite.device")


@pytest.mark.parametrize("available", [True, False])
def test_a_cuda_device_is_refused_only_without_cuda(monkeypatch, available):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    for device in ("cuda", "cuda:0"):
        problem = check_device(device)
        assert (problem is None) == available
        if not available:
            assert problem == f"--device {device}: CUDA is not available on this machine; allowed here: cpu or auto"
    assert check_device("cpu") is None and check_device("auto") is None and check_device("") is None


def test_warp_gets_an_explicit_cuda_index(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert warp_device(torch.device("cuda")) == torch.device("cuda", 3)
    assert warp_device(torch.device("cuda", 1)) == torch.device("cuda", 1)
    assert warp_device(torch.device("cpu")) == torch.device("cpu")


def test_host_rows_view_cpu_tensors_and_copy_env_0_of_others():
    rows = HostRows()
    values = torch.arange(12.0).reshape(2, 3, 2)
    view = rows(values)
    values[0, 0, 0] = 100.0  # a CPU tensor is read through a view kept for the next update
    assert view[0] == 100.0 and len(rows._views) == 1
    elsewhere = torch.Tensor._make_subclass(OnAnotherDevice, torch.arange(12.0).reshape(2, 3, 2))
    assert not elsewhere.is_cpu
    copy = rows(elsewhere)
    np.testing.assert_array_equal(copy, np.arange(6.0))  # env 0 only, flattened
    assert len(rows._views) == 1  # nothing kept for a tensor off the CPU: every update copies anew
