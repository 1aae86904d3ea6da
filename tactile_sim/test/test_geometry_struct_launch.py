"""StructLaunch: rebinding by data pointer never runs a launch on stale or wrongly shaped tensors, checks a tensor
once across launches without trusting it after an in-place change of its layout, and replays scalar arguments."""

import gc
import weakref

import pytest
import torch
import warp as wp

from helpers_scenes import grid_layout, make_suite
from tactile_sim.geometry.struct_launch import StructLaunch, unbind_checked
from tactile_sim.world.state import WorldState

R = 0.002


@wp.struct
class ScaleCall:
    x: wp.array2d(dtype=wp.vec3d)
    y: wp.array2d(dtype=wp.vec3d)


@wp.kernel
def scale_kernel(call: ScaleCall, factor: wp.float64):
    e, i = wp.tid()
    call.y[e, i] = call.x[e, i] * factor


def _launch(x, y, factor=2.0):
    return StructLaunch(scale_kernel, x.shape[:2], ScaleCall, {"x": x, "y": y}, [factor], x.device)


def test_fresh_tensors_bound_in_turn_give_their_own_results():
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(2, 5, 3, dtype=torch.float64, generator=g)
    launch = _launch(x0, torch.zeros_like(x0))
    first, second = (torch.randn(2, 5, 3, dtype=torch.float64, generator=g) for _ in range(2))
    outs = [torch.empty_like(x0) for _ in range(3)]
    for x, y in ((first, outs[0]), (second, outs[1]), (first, outs[2])):
        launch.bind("x", x)
        launch.bind("y", y)
        launch()
    torch.testing.assert_close(outs[0], 2 * first, rtol=0, atol=0)
    torch.testing.assert_close(outs[1], 2 * second, rtol=0, atol=0)
    torch.testing.assert_close(outs[2], 2 * first, rtol=0, atol=0)


def test_views_of_fresh_flat_buffers_and_in_place_data_changes():
    """Views at the same offsets of a new buffer each step (as the world hands out its state) are read anew; a bound
    tensor changed in place is read with its new values."""
    x0 = torch.zeros(1, 4, 3, dtype=torch.float64)
    y = torch.zeros_like(x0)
    launch = _launch(x0, y, 3.0)
    for k in range(3):
        flat = torch.arange(24, dtype=torch.float64) + 100 * k
        values = flat[12:].reshape(1, 4, 3).clone()
        x = flat.as_strided((1, 4, 3), (12, 3, 1), 12)
        launch.bind("x", x)
        launch()
        torch.testing.assert_close(y, 3 * values, rtol=0, atol=0)
        x.mul_(-1.0)
        launch.bind("x", x)
        launch()
        torch.testing.assert_close(y, -3 * values, rtol=0, atol=0)


def test_wrong_tensors_are_rejected_and_leave_the_binding_unchanged():
    x0 = torch.ones(1, 4, 3, dtype=torch.float64)
    y = torch.zeros_like(x0)
    launch = _launch(x0, y)
    bad = [torch.ones(1, 5, 3, dtype=torch.float64), torch.ones(1, 4, 3, dtype=torch.float32),
           torch.ones(1, 3, 4, dtype=torch.float64).transpose(1, 2)]
    for t in bad:
        with pytest.raises(ValueError, match="scale_kernel: x must be"):
            launch.bind("x", t)
    launch()
    torch.testing.assert_close(y, 2 * x0, rtol=0, atol=0)


def test_a_tensor_checked_once_is_checked_again_after_an_in_place_layout_change():
    x0 = torch.ones(1, 4, 3, dtype=torch.float64)
    launch = _launch(x0, torch.zeros_like(x0))
    other = _launch(x0.clone(), torch.zeros_like(x0))
    x = torch.full((1, 4, 3), 5.0, dtype=torch.float64)
    launch.bind("x", x)  # checked and remembered here
    x.resize_(1, 5, 3)
    with pytest.raises(ValueError, match="x must be"):
        other.bind("x", x)
    x.resize_(1, 4, 3)  # the right shape again: accepted after a new check
    other.bind("x", x)
    z = torch.ones(1, 4, 3, dtype=torch.float64)
    launch.bind("x", z)
    z.transpose_(1, 2)  # [1, 3, 4] now
    with pytest.raises(ValueError, match="x must be"):
        other.bind("x", z)


def test_a_tensor_checked_for_one_layout_is_checked_against_another():
    @wp.struct
    class PairCall:
        a: wp.array2d(dtype=wp.vec3d)
        b: wp.array2d(dtype=wp.vec3d)

    @wp.kernel
    def pair_kernel(call: PairCall):
        e, i = wp.tid()
        call.b[e, i] = call.a[e, i]

    short, long = torch.zeros(1, 2, 3, dtype=torch.float64), torch.zeros(1, 6, 3, dtype=torch.float64)
    launch = StructLaunch(pair_kernel, (1, 2), PairCall, {"a": short, "b": long}, [], short.device)
    t = torch.ones(1, 2, 3, dtype=torch.float64)
    launch.bind("a", t)
    with pytest.raises(ValueError, match="b must be"):
        launch.bind("b", t)


def test_unbind_checked_slices_bind_and_are_still_checked_after_a_layout_change():
    """Slices remembered as checked bind into any launch of their layout and give their own results; a slice whose
    layout was changed in place since, or a slice of another layout, is rejected; non-contiguous slices are not
    vouched for."""
    x0 = torch.zeros(1, 4, 3, dtype=torch.float64)
    launch = _launch(x0, torch.zeros_like(x0))
    rows = torch.arange(3 * 12, dtype=torch.float64).reshape(3, 1, 4, 3)
    slices = unbind_checked(rows)
    outs = [torch.empty_like(x0) for _ in slices]
    for x, y in zip(slices, outs):
        launch.bind("x", x)
        launch.bind("y", y)
        launch()
    for k, y in enumerate(outs):
        torch.testing.assert_close(y, 2 * rows[k], rtol=0, atol=0)
    slices[1].transpose_(1, 2)
    with pytest.raises(ValueError, match="x must be"):
        launch.bind("x", slices[1])
    with pytest.raises(ValueError, match="x must be"):
        launch.bind("x", unbind_checked(torch.zeros(2, 1, 5, 3, dtype=torch.float64))[0])
    strided = unbind_checked(torch.zeros(2, 1, 3, 4, dtype=torch.float64).transpose(2, 3))  # [1, 4, 3] slices
    with pytest.raises(ValueError, match="x must be contiguous"):
        launch.bind("x", strided[0])


def test_a_launch_over_an_empty_dim_binds_any_tensor_and_does_nothing():
    """An empty launch (e.g. a batch without probe blocks) has no struct to write into: binding a tensor already
    checked for its layout (a state slice every sensor binds) or any other tensor is a no-op, and so is the launch."""
    x0 = torch.zeros(1, 4, 3, dtype=torch.float64)
    y0 = torch.zeros_like(x0)
    launch = StructLaunch(scale_kernel, (1, 0), ScaleCall, {"x": x0, "y": y0}, [2.0], x0.device)
    checked = unbind_checked(torch.ones(2, 1, 4, 3, dtype=torch.float64))[0]
    for t in (checked, torch.ones(3, 3)):
        launch.bind("x", t)
    launch()
    assert launch.tensors["x"] is x0 and torch.equal(y0, torch.zeros_like(y0))


def test_checked_tensors_are_not_kept_alive_and_new_tensors_are_checked():
    """The table of checked tensors holds no tensor alive; a new tensor (possibly at the id of a dead one) is
    checked anew."""
    x0 = torch.zeros(1, 4, 3, dtype=torch.float64)
    launch = _launch(x0, torch.zeros_like(x0))
    x = torch.ones(1, 4, 3, dtype=torch.float64)
    ref = weakref.ref(x)
    launch.bind("x", x)
    launch.bind("x", x0)
    del x
    gc.collect()
    assert ref() is None
    for _ in range(3):
        launch.bind("x", torch.ones(1, 4, 3, dtype=torch.float64))  # freed at once: its id may be reused next
        with pytest.raises(ValueError, match="x must be"):
            launch.bind("x", torch.ones(1, 5, 3, dtype=torch.float64))


def test_scalar_arguments_set_after_recording_apply():
    x = torch.ones(1, 2, 3, dtype=torch.float64)
    y = torch.zeros_like(x)
    launch = _launch(x, y, 2.0)
    launch()
    assert y.unique().tolist() == [2.0]
    launch.set_arg(1, 7.0)
    launch()
    assert y.unique().tolist() == [7.0]


def _state(suite, ball_z):
    names = suite.scene.body_names
    rot = torch.eye(3, dtype=torch.float64).expand(1, len(names), 3, 3).clone()
    pos = torch.zeros(1, len(names), 3, dtype=torch.float64)
    pos[0, names.index("ball")] = torch.tensor([0.0, 0.0, ball_z], dtype=torch.float64)
    return WorldState(0.0, rot, pos, torch.zeros_like(pos), torch.zeros_like(pos))


def test_suite_states_of_different_steps_in_a_row_give_their_own_results():
    """Every fused sensor binds the state tensors of each step; a state evaluated after another reads its own poses
    (ball 2 mm into the pad: depth R + 2 mm; ball far away: 0), also when its tensors are changed in place."""
    depth = {"type": "ContactDepthProbe", "name": "depth", "link": "pad", "probe_radius": R,
             "probe_local_pos": grid_layout(5, 0.01)}
    ball = {"name": "ball", "geometry": [{"sphere": {"radius": 0.02}}], "pose": {"xyz": [0, 0, 1.0]}}
    suite = make_suite([depth, {**depth, "name": "k", "type": "KinematicTaxel"}], [ball])
    near, far = _state(suite, 0.018), _state(suite, 0.5)
    for k, (state, deep) in enumerate([(near, True), (far, False), (near, True), (_state(suite, 0.5), False)]):
        state.t = 0.01 * k
        suite.step(state)
        depth_max = float(suite.read_ground_truth("depth").max())
        force_z = float(suite.read_ground_truth("k").force[..., 2].min())
        assert depth_max == (pytest.approx(R + 0.002) if deep else 0.0)
        assert force_z == (pytest.approx(-1000.0 * (R + 0.002)) if deep else 0.0)
    near.pos[0, suite.scene.body_names.index("ball"), 2] = 0.5  # the same tensors, moved away in place
    near.t = 0.05
    suite.step(near)
    assert float(suite.read_ground_truth("depth").max()) == 0.0


@pytest.mark.parametrize("direct", [True, False], ids=["direct CPU replay", "warp replay"])
def test_both_cpu_replays_rebind_and_set_arguments_alike(monkeypatch, direct):
    """The direct replay is used only on the warp release it was checked against; warp's own replay (any other
    release) must give the same results through the same bind / set_arg calls."""
    from tactile_sim.geometry import struct_launch

    if not direct:
        monkeypatch.setattr(struct_launch, "DIRECT_CPU_WARP_VERSIONS", ())
    elif not wp.config.version.startswith(struct_launch.DIRECT_CPU_WARP_VERSIONS):
        pytest.skip(f"warp {wp.config.version} replays through warp's own launch")
    x = torch.arange(6, dtype=torch.float64).reshape(1, 2, 3)
    y = torch.zeros_like(x)
    launch = _launch(x, y, 2.0)
    assert (launch._direct is not None) == direct
    launch()
    torch.testing.assert_close(y, 2.0 * x, rtol=0, atol=0)
    x2, y2 = x + 10.0, torch.zeros_like(y)
    launch.bind("x", x2)
    launch.bind("y", y2)
    launch.set_arg(1, 3.0)
    launch()
    torch.testing.assert_close(y2, 3.0 * x2, rtol=0, atol=0)
    torch.testing.assert_close(y, 2.0 * x, rtol=0, atol=0)  # the first output is left alone
