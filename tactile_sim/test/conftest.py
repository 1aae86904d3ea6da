"""Test configuration: one torch thread (2-core CI machine), quiet warp, a CI hypothesis profile, derived-data
caches in a folder of the session."""

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

torch.set_num_threads(1)
os.environ.setdefault("WARP_LOG_LEVEL", "error")

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")


@pytest.fixture(autouse=True, scope="session")
def _session_derived_cache(tmp_path_factory):
    """tactile_sim.derived_cache files (also those of spawned processes) in a folder of this session: tests start
    from an empty cache and leave the user's alone."""
    os.environ["TACTILE_SIM_DERIVED_CACHE"] = str(tmp_path_factory.mktemp("derived_cache"))


@pytest.fixture(params=[torch.float64, torch.float32], ids=["f64", "f32"])
def dtype(request):
    """Run a test in both working dtypes."""
    return request.param
