"""The FFT path of the ElastomerTaxel dilation (LatticeConvolution) with source windows: every window (a block of
rows and columns outside which H = 0) must give the exact linear convolution, i.e. the same u as the direct double
sum over the dense pair tables (kernels evaluated on the real probe positions), for a sequence of windows that
moves, grows, touches the grid's edges, shrinks to one probe and comes back (the cached spectra)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import warp as wp

from helpers_pointcloud import centred_lattice, lattice, make_suite, sphere, step
from tactile_sim.sensors.elastomer import dfti, dilation as elastomer_dilation, pairwise as elastomer_pairwise
from tactile_sim.sensors.elastomer.dilation import (DilationParameters, LatticeConvolution, SeparableLattice,
                                                    pair_tables)
from tactile_sim.sensors.layout.probe_layout import ProbeLayout

WINDOWS = [(0, 9, 0, 12), (2, 5, 3, 8), (2, 5, 3, 8), (0, 1, 11, 12), (8, 9, 0, 1), (3, 4, 4, 5), (1, 9, 0, 7),
           (0, 9, 0, 12), (4, 7, 2, 12), (2, 5, 3, 8)]


def _truth(table_k, table_g, normals, depth, depth_p):
    """u[e, i] = Σ_j table_k[j, i] H[e, j] − a_i Σ_j table_g[j, i] H^p[e, j] (float64 numpy)."""
    return np.einsum("jic,ej->eic", table_k, depth) - np.einsum("ji,ej->ei", table_g, depth_p)[..., None] * normals


@pytest.fixture(autouse=True)
def warp_ready():
    wp.init()


@pytest.mark.parametrize("c,h", [(0.5, 0.0), (0.3, 0.003), (0.0, 0.002)])
def test_windowed_spectra_give_the_direct_sum(c, h):
    m, n = 9, 12
    tilted = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])
    layout = ProbeLayout.from_options(lattice(m, n, 0.004, 0.003, (-0.021, -0.013, 0.0)), 0.002, tilted.tolist(),
                                      where="ElastomerTaxel(name='fft')")
    prm = DilationParameters(20000.0, c, layout.epsilon0(), h, 1.7, 1.5)
    params = torch.tensor([prm.row()], dtype=torch.float64)
    conv = LatticeConvolution([(0, 0, layout)], params, [prm.exponent], torch.device("cpu"), torch.float64)
    table_k, table_g = (t.numpy() for t in pair_tables(layout.flat_positions, layout.flat_normals, [0], [m * n],
                                                         params))
    rng = np.random.default_rng(11)
    e = 3
    for window in WINDOWS:
        r0, r1, c0, c1 = window
        depth = np.zeros((e, m, n))
        depth[:, r0:r1, c0:c1] = rng.uniform(0.0, 1e-3, (e, r1 - r0, c1 - c0)) * (rng.random((e, r1 - r0, c1 - c0))
                                                                                  < 0.8)
        depth = depth.reshape(e, -1)
        depth_p = depth ** prm.exponent
        want = _truth(table_k, table_g, layout.flat_normals, depth, depth_p)
        got = conv(torch.as_tensor(depth), torch.as_tensor(depth_p), window=window).numpy()
        whole = conv(torch.as_tensor(depth), torch.as_tensor(depth_p)).numpy()
        scale = np.abs(want).max()
        assert scale > 0
        assert np.abs(got - want).max() <= 1e-10 * scale, (window, np.abs(got - want).max() / scale)
        assert np.abs(whole - want).max() <= 1e-10 * scale, (window, np.abs(whole - want).max() / scale)


needs_dfti = pytest.mark.skipif(not dfti.available(), reason="torch without MKL's DFTI")


@needs_dfti
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [40, 27])
def test_committed_transforms_equal_torch_fft_bit_for_bit(dtype, n):
    rng = np.random.default_rng(n)
    real = torch.as_tensor(rng.normal(size=(2, 5, n)), dtype=dtype)
    half = torch.as_tensor(rng.normal(size=(2, 5, n // 2 + 1, 2)), dtype=dtype)
    half = torch.view_as_complex(half).contiguous()
    full = torch.view_as_complex(torch.as_tensor(rng.normal(size=(2, 5, n, 2)), dtype=dtype)).contiguous()
    cases = [("rfft", real, torch.fft.rfft(real), torch.empty_like(half)),
             ("fft", full, torch.fft.fft(full), torch.empty_like(full)),
             ("ifft", full, torch.fft.ifft(full), torch.empty_like(full)),
             ("irfft", half.clone(), torch.fft.irfft(half, n=n), torch.empty_like(real))]
    for kind, source, want, got in cases:
        transform = dfti.BatchedFFT(kind, n, source, got)
        for _ in range(2):                                                 # replays read the buffers anew
            transform()
            assert got.dtype == want.dtype and torch.equal(got.view(torch.uint8), want.view(torch.uint8)), kind
            if kind == "irfft":
                source.copy_(half)


@needs_dfti
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_committed_transforms_give_torch_fft_path_bit_for_bit(dtype, monkeypatch):
    # two members (one with H^p: two maps) over the moving, growing and shrinking windows, in 3 envs: the CPU's
    # committed transforms (rebuilt when the window's size changes) give torch.fft's u value for value
    m, n = 9, 12
    grid = lattice(m, n, 0.004, 0.003, (-0.021, -0.013, 0.0))
    layout = ProbeLayout.from_options(grid, 0.002, where="ElastomerTaxel(name='fft')")
    prms = [DilationParameters(20000.0, 0.5, layout.epsilon0(), 0.0, 1.7, p) for p in (1.5, 1.0)]
    params = torch.tensor([prm.row() for prm in prms], dtype=torch.float64)
    conv = LatticeConvolution([(0, 0, layout), (1, m * n, layout)], params, [prm.exponent for prm in prms],
                              torch.device("cpu"), dtype)
    rng = np.random.default_rng(4)
    for window in WINDOWS:
        r0, r1, c0, c1 = window
        depth = np.zeros((3, 2, m, n))
        depth[..., r0:r1, c0:c1] = rng.uniform(0.0, 1e-3, (3, 2, r1 - r0, c1 - c0))
        depth = torch.as_tensor(depth.reshape(3, -1), dtype=dtype)
        depth_p = depth ** 1.5
        depth_p[:, m * n:] = depth[:, m * n:]
        committed = conv(depth, depth_p, window=window).clone()
        monkeypatch.setattr(elastomer_dilation.dfti, "available", lambda: False)
        torch_fft = conv(depth, depth_p, window=window)
        monkeypatch.undo()
        assert conv._transforms is not None and conv._transforms.key[0][-2:] == (r1 - r0, c1 - c0)
        assert torch.equal(committed.view(torch.uint8), torch_fft.view(torch.uint8)), window


@needs_dfti
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_maps_at_rest_reuse_the_fields_and_any_change_transforms_anew(dtype, monkeypatch):
    # a repeat of the last maps (same bits, same window) transforms nothing and gives the same u; one value changed
    # in place, or the same values in another window of the same size (other kernel spectra), give torch.fft's u of
    # the new input
    m, n = 9, 12
    layout = ProbeLayout.from_options(lattice(m, n, 0.004, 0.003, (-0.021, -0.013, 0.0)), 0.002,
                                      where="ElastomerTaxel(name='fft')")
    prm = DilationParameters(20000.0, 0.5, layout.epsilon0(), 0.0, 1.7, 1.5)
    params = torch.tensor([prm.row()], dtype=torch.float64)
    conv = LatticeConvolution([(0, 0, layout)], params, [prm.exponent], torch.device("cpu"), dtype)
    rng = np.random.default_rng(8)
    block = rng.uniform(1e-4, 1e-3, (2, 3, 4))
    first, moved = (1, 4, 2, 6), (5, 8, 2, 6)

    def placed(window):
        r0, r1, c0, c1 = window
        h = np.zeros((2, m, n))
        h[:, r0:r1, c0:c1] = block
        h = torch.as_tensor(h.reshape(2, -1), dtype=dtype)
        return h, h ** 1.5

    def torch_fft(depth, depth_p, window):
        monkeypatch.setattr(elastomer_dilation.dfti, "available", lambda: False)
        u = conv(depth, depth_p, window=window).clone()
        monkeypatch.undo()
        return u

    def same(a, b):
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))

    depth, depth_p = placed(first)
    u = conv(depth, depth_p, window=first).clone()
    assert same(u, torch_fft(depth, depth_p, first))
    transforms = conv._transforms
    runs, row_pass = [], transforms.row_pass
    monkeypatch.setattr(transforms, "row_pass", lambda: runs.append(row_pass()))
    assert same(conv(depth.clone(), depth_p.clone(), window=first), u) and not runs
    monkeypatch.undo()
    depth, depth_p = placed(moved)
    assert torch.equal(conv._window_maps(depth, depth_p, moved), conv._transforms.window)  # the maps held
    elsewhere = conv(depth, depth_p, window=moved).clone()
    assert conv._transforms is transforms and same(elsewhere, torch_fft(depth, depth_p, moved))
    assert not same(elsewhere, u)
    depth[1, 6 * n + 3] *= 1.25                                          # inside the window, in place
    depth_p[1, 6 * n + 3] = depth[1, 6 * n + 3] ** 1.5
    changed = conv(depth, depth_p, window=moved).clone()
    assert not same(changed, elsewhere) and same(changed, torch_fft(depth, depth_p, moved))


def test_window_outside_the_sources_is_caught_by_the_truth():
    # a window that leaves out some sources must differ from the direct sum (the comparison above can fail)
    m, n = 6, 7
    layout = ProbeLayout.from_options(lattice(m, n, 0.003, 0.003), 0.002, where="ElastomerTaxel(name='fft')")
    prm = DilationParameters(20000.0, 0.5, layout.epsilon0(), 0.0, 1.0, 1.0)
    params = torch.tensor([prm.row()], dtype=torch.float64)
    conv = LatticeConvolution([(0, 0, layout)], params, [1.0], torch.device("cpu"), torch.float64)
    depth = torch.zeros((1, m * n), dtype=torch.float64)
    depth[0, 0] = 1e-3
    whole = conv(depth, depth).numpy()
    cut = conv(depth, depth, window=(1, m, 1, n)).numpy()
    assert np.abs(whole).max() > 0 and np.abs(cut).max() == 0


@pytest.mark.parametrize("exponent", [1.5, 1.0])
def test_depth_buffer_halves_are_read_where_they_are(exponent):
    # H and H^p as the two halves of one buffer [2, E, P] (ElastomerTaxel's depths), two sensors of one shape: the
    # windows' maps are read from the buffer in place (no copy), so every call must see the values written since
    # and give the direct sum; the same values as two separate tensors give the same bits, and separate tensors
    # with other values in the same window are not answered from the buffer
    m, n, e = 7, 10, 2
    layout = ProbeLayout.from_options(lattice(m, n, 0.003, 0.004), 0.002, where="ElastomerTaxel(name='fft')")
    prms = [DilationParameters(20000.0, c, layout.epsilon0(), 0.0, scale, exponent) for c, scale in
            [(0.5, 1.0), (0.2, 0.6)]]
    params = torch.tensor([prm.row() for prm in prms], dtype=torch.float64)
    p = m * n
    conv = LatticeConvolution([(0, 0, layout), (1, p, layout)], params, [exponent] * 2, torch.device("cpu"),
                              torch.float64)
    positions = np.concatenate([layout.flat_positions] * 2)
    normals = np.concatenate([layout.flat_normals] * 2)
    table_k, table_g = (t.numpy() for t in pair_tables(positions, normals, [0, 1], [p, p], params))
    depths = torch.zeros((2, e, 2 * p), dtype=torch.float64)
    depth, depth_p = depths.unbind(0)
    rng = np.random.default_rng(5)

    def sources(window):
        r0, r1, c0, c1 = window
        h = np.zeros((e, 2, m, n))
        h[..., r0:r1, c0:c1] = rng.uniform(1e-4, 1e-3, (e, 2, r1 - r0, c1 - c0))
        h = h.reshape(e, -1)
        return h, h ** exponent

    for window in [(0, 7, 0, 10), (1, 4, 2, 6), (1, 4, 2, 6), (3, 7, 5, 10), (1, 4, 2, 6), (0, 1, 9, 10)]:
        h, hp = sources(window)
        depth.copy_(torch.as_tensor(h))
        depth_p.copy_(torch.as_tensor(hp))
        got = conv(depth, depth_p, window=window).clone()
        want = _truth(table_k, table_g, normals, h, hp)
        assert np.abs(got.numpy() - want).max() <= 1e-10 * np.abs(want).max(), window
        assert conv._window_maps(depth, depth_p, window).untyped_storage().data_ptr() == \
            depths.untyped_storage().data_ptr()
        assert torch.equal(conv(depth.clone(), depth_p.clone(), window=window), got), window
        h2, hp2 = sources(window)
        other = conv(torch.as_tensor(h2), torch.as_tensor(hp2), window=window).numpy()
        want2 = _truth(table_k, table_g, normals, h2, hp2)
        assert np.abs(other - want2).max() <= 1e-10 * np.abs(want2).max(), window


@pytest.mark.parametrize("group,c", [(LatticeConvolution, 0.5), (SeparableLattice, 1.0)])
def test_fields_along_the_link_axes_are_interleaved_into_out(group, c):
    # a grid along the link axes with normal +z (its field basis is the identity): written into out, the fields
    # are interleaved by the native kernel (one launch per fields width, kept); out must hold, bit for bit, the u
    # returned without out (a torch permute), and the direct sum, over windows of several widths, back and forth
    m, n, e = 9, 12, 3
    layout = ProbeLayout.from_options(lattice(m, n, 0.004, 0.003), 0.002, where="ElastomerTaxel(name='fft')")
    prm = DilationParameters(20000.0, c, layout.epsilon0(), 0.0, 1.3, 2.0)
    params = torch.tensor([prm.row()], dtype=torch.float64)
    table_k, table_g = (t.numpy() for t in pair_tables(layout.flat_positions, layout.flat_normals, [0], [m * n],
                                                         params))
    rng = np.random.default_rng(3)
    for dtype in (torch.float64, torch.float32):
        conv = group([(0, 0, layout)], params, [prm.exponent], torch.device("cpu"), dtype)
        assert conv.identity
        out = torch.full((e, m * n, 3), torch.nan, dtype=dtype)
        for window in WINDOWS:
            r0, r1, c0, c1 = window
            depth = np.zeros((e, m, n))
            depth[:, r0:r1, c0:c1] = rng.uniform(1e-4, 1e-3, (e, r1 - r0, c1 - c0))
            depth = depth.reshape(e, -1)
            h, hp = torch.as_tensor(depth, dtype=dtype), torch.as_tensor(depth ** prm.exponent, dtype=dtype)
            returned = conv(h, hp, window=window)
            assert conv(h, hp, out, window=window) is None
            assert torch.equal(out, returned), window
            want = _truth(table_k, table_g, layout.flat_normals, depth, depth ** prm.exponent)
            tolerance = 1e-10 if dtype == torch.float64 else 1e-5
            assert np.abs(out.double().numpy() - want).max() <= tolerance * np.abs(want).max(), window


@pytest.mark.parametrize("exponent,shared", [(1.0, True), (2.0, True), (2.0, False)])
def test_separable_products_are_the_matmul_formula_bit_for_bit(exponent, shared):
    # the separable path's products run as bmm calls between views and buffers kept per window, and a call whose
    # maps hold the last call's bits returns the fields held: every call must give, bit for bit, the matmul formula
    # of the model (G_v H K_uᵀ, K_v H G_uᵀ, −G_v H^p G_uᵀ on the window), for two members of one shape in three
    # envs, H and H^p as halves of one buffer or apart, windows that repeat, and values changed in place in a window
    m, n, e = 9, 12, 3
    layout = ProbeLayout.from_options(lattice(m, n, 0.003, 0.004), 0.002, where="ElastomerTaxel(name='sep')")
    prms = [DilationParameters(20000.0, 1.0, layout.epsilon0(), 0.0, scale, exponent) for scale in (1.0, 0.6)]
    params = torch.tensor([prm.row() for prm in prms], dtype=torch.float64)
    p = m * n
    rng = np.random.default_rng(8)
    for dtype in (torch.float32, torch.float64):
        conv = SeparableLattice([(0, 0, layout), (1, p, layout)], params, [exponent] * 2, torch.device("cpu"), dtype)
        depths = torch.zeros((2, e, 2 * p), dtype=dtype)
        depth, depth_p = depths.unbind(0) if shared else (depths[0].clone(), depths[1].clone())
        for window in WINDOWS[:4] + WINDOWS[:4]:
            r0, r1, c0, c1 = window
            for refill in range(2):                   # new values in place in the same window: not the held fields
                h = np.zeros((e, 2, m, n))
                h[..., r0:r1, c0:c1] = rng.uniform(0.0, 1e-3, (e, 2, r1 - r0, c1 - c0))
                depth.copy_(torch.as_tensor(h.reshape(e, -1)))
                depth_p.copy_(depth ** exponent)
                got = conv(depth, depth_p, window=window).clone()
                maps = conv.maps(depth, depth_p, window)
                right, left_u, left_v = conv.right[..., c0:c1, :], conv.left_u[..., r0:r1], conv.left_v[..., r0:r1]
                along = torch.matmul(maps[:, :, 0], right)
                normal = torch.matmul(maps[:, :, 1], right[..., n:]) if conv.powered else along[..., n:]
                fields = torch.stack([torch.matmul(left_u, along[..., :n]), torch.matmul(left_v, along[..., n:]),
                                      torch.matmul(left_u, normal).neg_()], 2)
                want = conv.emit(fields, None)
                assert torch.equal(got, want), (dtype, window, refill)
                assert torch.equal(conv(depth, depth_p, window=window), want), (dtype, window, refill)


def test_scaled_interleave_writes_u_and_gain_times_u():
    # the interleave's variant for the staging buffers: out holds u as returned (a torch permute), measured the torch
    # product u·g with the probe gain per probe, bit for bit, over windows of several widths, back and forth
    m, n, e = 9, 12, 3
    layout = ProbeLayout.from_options(lattice(m, n, 0.004, 0.003), 0.002, where="ElastomerTaxel(name='fft')")
    prm = DilationParameters(20000.0, 0.5, layout.epsilon0(), 0.0, 1.3, 2.0)
    params = torch.tensor([prm.row()], dtype=torch.float64)
    rng = np.random.default_rng(5)
    for dtype in (torch.float64, torch.float32):
        conv = LatticeConvolution([(0, 0, layout)], params, [prm.exponent], torch.device("cpu"), dtype)
        gain = torch.as_tensor(rng.uniform(0.8, 1.2, (e, m * n)), dtype=dtype)
        out, measured = (torch.full((e, m * n, 3), torch.nan, dtype=dtype) for _ in range(2))
        for window in WINDOWS:
            r0, r1, c0, c1 = window
            depth = np.zeros((e, m, n))
            depth[:, r0:r1, c0:c1] = rng.uniform(1e-4, 1e-3, (e, r1 - r0, c1 - c0))
            h = torch.as_tensor(depth.reshape(e, -1), dtype=dtype)
            returned = conv(h, h ** 2, window=window)
            assert conv(h, h ** 2, out, window=window, scaled=(measured, gain)) is None
            assert torch.equal(out, returned), window
            assert torch.equal(measured, returned * gain[..., None]), window


@pytest.mark.parametrize("compressibility,group", [(0.5, LatticeConvolution), (1.0, SeparableLattice)])
def test_dilation_emitted_into_the_staging_buffers_reads_as_the_field_path(compressibility, group, monkeypatch):
    # one lattice grid (FFT path; c = 1: the separable path) along the link axes on the CPU: in a step without shear
    # its interleave writes u and g·u straight into the staging buffers. With that off (the field, then the emit
    # kernel) every read and ground truth is the same, bit for bit, while a ball presses (no shear yet), slides (shear:
    # the field path) and rests (anchored samples, no drag), with noise, bias, a probe gain and a delay
    monkeypatch.setattr(elastomer_pairwise, "PAIRWISE_WORK", 0)
    sensor = {"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"],
              "compressibility": compressibility,
              "probe_local_pos": centred_lattice(16, 0.004).tolist(), "noise": 1e-4, "bias": 1e-5, "probe_gain": 1.1,
              "delay": 0.01}
    path = [(0.0, 0.0, 0.03), (0.0, 0.0, 0.018), (0.001, 0.0, 0.018), (0.002, 0.0005, 0.0181), (0.002, 0.0005, 0.0181),
            (0.002, 0.0005, 0.0181)]

    def run(staged: bool) -> tuple[list, list]:
        suite = make_suite([sensor], [sphere("ball", 0.02, path[0])], n_envs=2, dtype="float32")
        batch = suite.locate("el")[0]
        assert batch.dilation.stages and batch.emit is not None and batch.pairwise is None
        assert isinstance(batch.dilation.groups[0], group)
        batch.dilation.stages = staged
        reads, slots = [], []
        for t, xyz in enumerate(path):
            step(suite, 0.01 * t, {"ball": xyz})
            reads += [suite.read("el").clone(), suite.read_ground_truth("el").clone()]
            slots.append(batch.shear._slots)
        return reads, slots

    (staged, slots), (field, _) = run(True), run(False)
    assert 0 in slots[1:] and max(slots) > 0                     # steps of both paths, in contact
    assert any(bool(x.abs().max() > 0) for x in staged)
    for a, b in zip(staged, field):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_window_of_two_sensors_of_one_shape_holds_both_contacts(monkeypatch):
    # two FFT-path grids of one shape, apart on the pad, share one group and one window: the union of their contacts'
    # rows and columns. Each sensor's u must be what it reads alone (its own window; other transform sizes, so equal
    # to rounding), as a ball presses into one grid and then into the other, in two envs apart
    monkeypatch.setattr(elastomer_pairwise, "PAIRWISE_WORK", 0)

    def sensor(name: str, x: float) -> dict:
        return {"type": "ElastomerTaxel", "name": name, "link": "pad", "track": ["ball"], "compressibility": 0.5,
                "shear_scale": 0.0, "probe_local_pos": (lattice(8, 10, 0.003, 0.003, (x, -0.0105, 0.0))).tolist()}

    sensors = [sensor("a", -0.035), sensor("b", 0.006)]
    path = [[(-0.03, 0.0, 0.0185), (0.012, 0.003, 0.0188)], [(0.013, -0.002, 0.0186), (-0.025, 0.002, 0.0187)]]

    def run(chosen: list[dict]) -> list[dict]:
        suite = make_suite(chosen, [sphere("ball", 0.02, (0.0, 0.0, 0.05))], n_envs=2)
        out = []
        for t, xyz in enumerate(path):
            rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
            suite.update(0.01 * t, object_poses={"ball": (rot, torch.tensor(xyz, dtype=torch.float64))})
            out.append({s["name"]: suite.read_ground_truth(s["name"]).clone() for s in chosen})
        return out

    together = run(sensors)
    for s in sensors:
        alone = run([s])
        for both, one in zip(together, alone):
            want = one[s["name"]]
            assert want.abs().max() > 0
            assert (both[s["name"]] - want).abs().max() <= 1e-9 * want.abs().max()
