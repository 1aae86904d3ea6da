"""TemperatureGrid (docs/models/temperature_grid.md#temperature-grid): closed-form checks of the exchange, conduction,
lumped bodies and the sensing lag."""

import math

import numpy as np
import pytest
import torch

from tactile_sim.constants import STEFAN_BOLTZMANN
from tactile_sim.errors import ConfigError
from tactile_sim.suite import SensorSuite

RHO_C = 1000.0 * 1000.0  # default ρc, J/(m³K)
K = 50.0  # default conductivity, W/(mK)
PAD = (0.1, 0.1, 0.02)  # the sensor body, m
AREA = 2 * (PAD[0] * PAD[1] + PAD[1] * PAD[2] + PAD[0] * PAD[2])  # 0.028 m²
VOLUME = PAD[0] * PAD[1] * PAD[2]


def material(base=21.0, emissivity=0.0, **extra):
    return {"base_temperature": base, "emissivity": emissivity, **extra}


def pad(name="pad", size=PAD, xyz=(0.0, 0.0, 0.0)):
    return {"name": name, "geometry": [{"box": {"size": list(size)}}], "pose": {"xyz": list(xyz)}}


def grid(name="tg", link="pad", **extra):
    return {"type": "TemperatureGrid", "name": name, "link": link, **extra}


def make(sensors, objects, dt=1.0, n_envs=0, dtype="float64"):
    return SensorSuite.from_yaml({"suite": {"dt": dt, "dtype": dtype, "n_envs": n_envs},
                                  "objects": objects, "sensors": sensors})


def run(suite, steps, t0=0.0):
    for k in range(steps):
        suite.update(t0 + k * suite.dt)


def system(suite, name="tg"):
    return suite.locate(name)[0].system


# ------------------------------------------------------------------ 1. Newton cooling
@pytest.mark.parametrize("dt", [0.5, 50.0, 5000.0])
def test_newton_cooling_of_one_cell_is_exponential_for_any_dt(dt):
    h = 10.0
    suite = make([grid(convection_coefficient=h, ambient_temperature=21.0,
                       properties_dict={"pad": material(80.0)})], [pad()], dt=dt)
    tau = RHO_C * VOLUME / (h * AREA)
    for k in range(1, 6):
        suite.update(k * dt)
        expected = 21.0 + 59.0 * math.exp(-k * dt / tau)
        np.testing.assert_allclose(suite.read("tg").item(), expected, rtol=1e-6)


def test_newton_cooling_float32_drift_is_small():
    h, dt, steps = 10.0, 1.0, 3000
    suite = make([grid(convection_coefficient=h, properties_dict={"pad": material(80.0)})], [pad()], dt=dt,
                 dtype="float32")
    run(suite, steps)
    expected = 21.0 + 59.0 * math.exp(-steps * dt * h * AREA / (RHO_C * VOLUME))
    assert abs(suite.read("tg").item() - expected) / expected < 4e-4


@pytest.mark.parametrize("dt", [10.0, 714.0])
def test_resolved_grid_mean_follows_newton_cooling_at_small_biot(dt):
    h = 10.0
    suite = make([grid(grid_size=[4, 4, 2], convection_coefficient=h, properties_dict={"pad": material(80.0)})],
                 [pad()], dt=dt)
    tau = RHO_C * VOLUME / (h * AREA)
    assert dt <= tau
    for k in range(1, 30):
        suite.update(k * dt)
        expected = 21.0 + 59.0 * math.exp(-k * dt / tau)
        assert abs(suite.read("tg").mean().item() - expected) <= 0.01 * 59.0


# ------------------------------------------------------------------ 2. conduction
def adiabatic(size, dt, **extra):
    suite = make([grid(grid_size=list(size), convection_coefficient=0.0, properties_dict={"pad": material()},
                       **extra)], [pad()], dt=dt)
    return suite, system(suite)


def test_two_halves_relax_by_the_backward_euler_factor():
    dt = 3.0
    suite, sys_ = adiabatic((2, 1, 1), dt)
    sys_.t_cell[0, sys_.cell_index[0]] = torch.tensor([80.0, 20.0], dtype=torch.float64)
    dx = PAD[0] / 2
    factor = 1.0 + 2.0 * dt * (K / RHO_C) / dx**2
    for k in range(1, 8):
        suite.update(k * dt)
        t = suite.read("tg").flatten().numpy()
        np.testing.assert_allclose(t.sum(), 100.0, rtol=1e-14)
        np.testing.assert_allclose(t[0] - t[1], 60.0 / factor**k, rtol=1e-12)


def fv_laplacian(n: int, delta: float) -> np.ndarray:
    """Finite-volume Laplacian with zero-flux walls (1/m²): +1 per neighbour off the diagonal, minus the number of
    neighbours on it (0 for a single cell)."""
    off = np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    return (off - np.diag(off.sum(1))) / delta**2


@pytest.mark.parametrize("size", [(7, 1, 1), (3, 4, 2), (5, 4, 4)])  # the last beyond DENSE_CONDUCTION_CELLS
def test_conduction_matches_a_dense_backward_euler_solve(size):
    dt = 20.0
    suite, sys_ = adiabatic(size, dt)
    rng = np.random.default_rng(0)
    field = rng.uniform(10.0, 90.0, size)
    sys_.t_cell[0, sys_.cell_index[0]] = torch.as_tensor(field.reshape(-1))
    deltas = [PAD[a] / size[a] for a in range(3)]
    eyes = [np.eye(n) for n in size]
    lap = sum(np.kron(np.kron(fv_laplacian(size[0], deltas[0]) if a == 0 else eyes[0],
                              fv_laplacian(size[1], deltas[1]) if a == 1 else eyes[1]),
                      fv_laplacian(size[2], deltas[2]) if a == 2 else eyes[2]) for a in range(3))
    step = np.eye(field.size) - dt * (K / RHO_C) * lap
    ref = field.reshape(-1)
    for k in range(1, 4):
        suite.update(k * dt)
        ref = np.linalg.solve(step, ref)
        np.testing.assert_allclose(suite.read("tg").flatten().numpy(), ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(ref.sum(), field.sum(), rtol=1e-13)


def test_energy_is_conserved_with_adiabatic_walls_to_round_off():
    dt = 0.05
    suite, sys_ = adiabatic((8, 6, 3), dt)
    rng = np.random.default_rng(1)
    field = rng.uniform(0.0, 100.0, 8 * 6 * 3)
    sys_.t_cell[0, sys_.cell_index[0]] = torch.as_tensor(field)
    lo, hi = field.min(), field.max()
    run(suite, 300, dt)
    t = suite.read("tg").numpy()
    assert abs(t.sum() - field.sum()) <= 1e-12 * field.sum() * 8
    assert t.min() >= lo and t.max() <= hi  # discrete maximum principle
    assert t.std() < field.std()


def test_generation_only_adds_dt_q_over_rho_c_dz():
    q, dt = 500.0, 2.0
    suite, sys_ = adiabatic((2, 3, 4), dt, heat_generation=q)
    before = np.full((2, 3, 4), 21.0)
    for k in range(1, 4):
        suite.update(k * dt)
        t = suite.read("tg").numpy()
        np.testing.assert_allclose(t - before, dt * q / (RHO_C * PAD[2] / 4), rtol=1e-12)
        before = t


def test_heat_generation_per_cell_array():
    q = np.zeros((2, 1, 2))
    q[1, 0, 1] = 800.0
    dt = 1.0
    suite, _ = adiabatic((2, 1, 2), dt, heat_generation=q.tolist())
    suite.update(dt)
    t = suite.read("tg").numpy()
    # total energy: dt · q · Δx·Δy into the whole link
    energy = (t - 21.0).sum() * RHO_C * VOLUME / 4
    np.testing.assert_allclose(energy, dt * 800.0 * (PAD[0] / 2) * PAD[1], rtol=1e-12)
    assert t[1, 0, 1] > t[0, 0, 0]


# ------------------------------------------------------------------ 3. contact and radiation
def hot_block(xyz=(0.0, 0.0, PAD[2] / 2 + 0.025), size=(0.2, 0.2, 0.05), name="hot"):
    return {"name": name, "geometry": [{"box": {"size": list(size)}}], "pose": {"xyz": list(xyz)}}


def test_hot_contact_reaches_the_analytic_steady_state():
    h = 10.0
    suite = make([grid(convection_coefficient=h, properties_dict={"pad": material(), "hot": material(80.0)})],
                 [pad(), hot_block()], dt=50.0)
    run(suite, 200)
    a_top = PAD[0] * PAD[1]
    g = K / PAD[2] * a_top
    a_conv = AREA - a_top
    expected = (g * 80.0 + h * a_conv * 21.0) / (g + h * a_conv)
    np.testing.assert_allclose(suite.read("tg").item(), expected, rtol=1e-6)


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
def test_partial_contact_per_env_relaxes_with_the_covered_area(dtype, rtol):
    """One 1×1×1 grid per env (h = ε = 0) under an 80 °C block: the whole top face, its x > 0 half (the block edge
    on a sample-lattice boundary: 200 of 400 top samples of 5 mm) and lifted clear. Fixed partner: T_k = 80 − 59
    exp(−k dt U A_cov/(ρcV)), U = 1/(ℓ/k + ℓ/k), ℓ = Δz/2; the lifted env keeps 21 °C exactly."""
    dt = 2.0
    suite = make([grid(convection_coefficient=0.0, properties_dict={"pad": material(), "hot": material(80.0)})],
                 [pad(), hot_block()], dt=dt, n_envs=3, dtype=dtype)
    z = PAD[2] / 2 + 0.025
    pos = torch.tensor([[0.0, 0.0, z], [0.1, 0.0, z], [0.0, 0.0, z + 0.01]], dtype=torch.float64)
    poses = {"hot": (torch.eye(3, dtype=torch.float64).expand(3, 3, 3), pos)}
    u = 1.0 / (PAD[2] / 2 / K + PAD[2] / 2 / K)
    covered = np.array([1.0, 0.5, 0.0]) * PAD[0] * PAD[1]
    for k in range(1, 4):
        suite.update(k * dt, object_poses=poses)
        expected = 80.0 - 59.0 * np.exp(-k * dt * u * covered / (RHO_C * VOLUME))
        np.testing.assert_allclose(suite.read("tg").double().numpy().reshape(3), expected, rtol=rtol)
    assert suite.read("tg")[2].item() == pytest.approx(21.0, abs=0.0 if dtype == "float64" else 1e-5)


def test_small_grids_use_the_dense_operator_and_large_ones_the_separable_dct():
    from tactile_sim.sensors.thermal.system import DENSE_CONDUCTION_CELLS
    assert 3 * 4 * 2 <= DENSE_CONDUCTION_CELLS < 5 * 4 * 4
    assert system(adiabatic((3, 4, 2), 1.0)[0]).conduction_operator is not None
    assert system(adiabatic((5, 4, 4), 1.0)[0]).conduction_operator is None


def test_series_interface_conductance():
    hc, dt = 300.0, 1.0
    suite = make([grid(convection_coefficient=0.0, contact_conductance=hc,
                       properties_dict={"pad": material(), "hot": material(80.0, conductivity=10.0)})],
                 [pad(), hot_block()], dt=dt)
    suite.update(dt)
    a_top = PAD[0] * PAD[1]
    u = 1.0 / (PAD[2] / 2 / K + PAD[2] / 2 / 10.0 + 1.0 / hc)
    rate = u * a_top / (RHO_C * VOLUME)
    np.testing.assert_allclose(suite.read("tg").item(), 80.0 - 59.0 * math.exp(-rate * dt), rtol=1e-12)


def test_radiation_step_is_the_exact_linearised_exponential():
    dt, eps = 30.0, 0.9
    suite = make([grid(convection_coefficient=0.0, ambient_temperature=15.0,
                       properties_dict={"pad": material(120.0, emissivity=eps)})], [pad()], dt=dt)
    suite.update(dt)
    tk, ta = 120.0 + 273.15, 15.0 + 273.15
    h_rad = eps * STEFAN_BOLTZMANN * (tk * tk + ta * ta) * (tk + ta)
    expected = 15.0 + 105.0 * math.exp(-dt * h_rad * AREA / (RHO_C * VOLUME))
    np.testing.assert_allclose(suite.read("tg").item(), expected, rtol=1e-12)


def test_bodies_without_material_cover_the_surface_but_exchange_nothing():
    h, dt = 10.0, 100.0
    suite = make([grid(convection_coefficient=h, properties_dict={"pad": material(80.0)})], [pad(), hot_block()],
                 dt=dt)
    suite.update(dt)
    a_conv = AREA - PAD[0] * PAD[1]
    expected = 21.0 + 59.0 * math.exp(-dt * h * a_conv / (RHO_C * VOLUME))
    np.testing.assert_allclose(suite.read("tg").item(), expected, rtol=1e-12)


def test_rotating_link_and_touching_body_together_changes_nothing():
    angle, axis = 1.1, np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rot = np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k
    readings = []
    small = (0.05, 0.04, 0.03)  # covers part of the top face; edges on sample-lattice cell boundaries
    centre = np.array([0.025, -0.03, PAD[2] / 2 + 0.015])
    for r in (np.eye(3), rot):
        suite = make([grid(grid_size=[4, 4, 2], convection_coefficient=5.0, ambient_temperature=10.0,
                           properties_dict={"pad": material(30.0, emissivity=0.5), "hot": material(90.0)})],
                     [pad(), hot_block(size=small)], dt=20.0)
        poses = {"pad": (torch.as_tensor(r), torch.zeros(3, dtype=torch.float64)),
                 "hot": (torch.as_tensor(r), torch.as_tensor(r @ centre))}
        for step in range(1, 6):
            suite.update(20.0 * step, object_poses=poses)
        readings.append(suite.read("tg").numpy())
    np.testing.assert_allclose(readings[1], readings[0], rtol=1e-6)
    assert readings[0].max() > readings[0].min() + 1.0  # the contact really heats one side


# ------------------------------------------------------------------ 4. reset and the sensing element
def test_reset_restores_base_exactly_and_the_lag_restarts_at_the_truth():
    suite = make([grid(grid_size=[3, 2, 2], sensor_time_constant=5.0,
                       properties_dict={"pad": material(37.5), "hot": material(80.0)})],
                 [pad(), hot_block()], dt=10.0, n_envs=2)
    run(suite, 5)
    suite.reset(torch.tensor([True, False]))
    sys_ = system(suite)
    assert torch.equal(sys_.grid_temperatures(0)[0], torch.full((12,), 37.5, dtype=torch.float64))
    assert not torch.equal(sys_.grid_temperatures(0)[1], torch.full((12,), 37.5, dtype=torch.float64))
    value, valid = suite.read("tg", with_valid=True)
    assert valid.tolist() == [False, True]


def test_measured_value_after_reset_in_equilibrium_is_the_base_temperature():
    suite = make([grid(sensor_time_constant=30.0, ambient_temperature=21.0, properties_dict={"pad": material()})],
                 [pad()], dt=1.0)
    run(suite, 3)
    suite.reset()
    suite.update(10.0)
    assert suite.read("tg").item() == pytest.approx(21.0, abs=1e-12)


def test_lag_follows_a_temperature_step_as_a_first_order_response():
    tau, dt = 3000.0, 1000.0
    suite = make([grid(convection_coefficient=0.0, sensor_time_constant=tau,
                       properties_dict={"pad": material(), "hot": material(80.0)})], [pad(), hot_block()], dt=dt)
    for k in range(1, 8):
        suite.update(k * dt)  # the grid reaches 80 °C within the first step (exp(−125))
        np.testing.assert_allclose(suite.read_ground_truth("tg").item(), 80.0, rtol=1e-12)
        np.testing.assert_allclose(suite.read("tg").item(), 80.0 - 59.0 * math.exp(-k * dt / tau), rtol=1e-12)


def test_noise_chain_acts_after_the_lag_in_celsius():
    suite = make([grid(grid_size=[2, 1, 1], bias=[0.5, -0.25], resolution=0.125,
                       properties_dict={"pad": material(21.1)})], [pad()], dt=1.0)
    suite.update(1.0)
    truth = suite.read_ground_truth("tg").flatten().numpy()
    measured = suite.read("tg").flatten().numpy()
    np.testing.assert_allclose(measured, np.round((truth + [0.5, -0.25]) / 0.125) * 0.125, rtol=1e-12)


# ------------------------------------------------------------------ 5. lumped bodies and coupled grids
def cube(name, z, x=1.0):
    return {"name": name, "geometry": [{"box": {"size": [0.05, 0.05, 0.05]}}], "pose": {"xyz": [x, 0.0, z]}}


def test_two_lumped_bodies_conserve_energy_and_relax_exponentially():
    dt = 1.0
    props = {"pad": material(), "a": material(80.0), "b": material(20.0, density=2000.0, conductivity=20.0)}
    suite = make([grid(convection_coefficient=0.0, simulate_all_link_temperatures=True, properties_dict=props)],
                 [pad(), cube("a", 0.0), cube("b", 0.05)], dt=dt)
    batch = suite.locate("tg")[0]
    v, s = 0.05**3, 6 * 0.05**2
    c_a, c_b = RHO_C * v, 2 * RHO_C * v
    u = 1.0 / (v / s / K + v / s / 20.0)
    g = u * 0.05**2
    for k in range(1, 6):
        suite.update(k * dt)
        lt = {n: t.item() for n, t in batch.link_temperatures(0).items()}
        np.testing.assert_allclose(c_a * lt["a"] + c_b * lt["b"], c_a * 80.0 + c_b * 20.0, rtol=1e-13)
        np.testing.assert_allclose(lt["a"] - lt["b"], 60.0 * math.exp(-k * dt * g * (1 / c_a + 1 / c_b)), rtol=1e-12)


def test_grid_and_lumped_body_exchange_conserves_energy():
    dt = 5.0
    props = {"pad": material(), "hot": material(80.0)}
    suite = make([grid(grid_size=[3, 3, 2], convection_coefficient=0.0, simulate_all_link_temperatures=True,
                       properties_dict=props)], [pad(), hot_block(size=(0.06, 0.06, 0.05))], dt=dt)
    batch = suite.locate("tg")[0]
    c_cell = RHO_C * VOLUME / 18
    c_hot = RHO_C * 0.06 * 0.06 * 0.05

    def energy():
        return c_cell * suite.read_ground_truth("tg").sum().item() + c_hot * batch.link_temperatures(0)["hot"].item()

    run(suite, 1)
    e0 = c_cell * 18 * 21.0 + c_hot * 80.0
    for k in range(2, 20):
        np.testing.assert_allclose(energy(), e0, rtol=1e-13)
        suite.update(k * dt)
    t = suite.read_ground_truth("tg").numpy()
    assert 21.0 < t.max() < 80.0 and batch.link_temperatures(0)["hot"].item() < 80.0


def test_two_grids_exchange_through_their_contact_and_conserve_energy():
    dt = 5.0
    props = {"pad": material(80.0), "pad2": material(20.0)}
    sensors = [grid(grid_size=[2, 2, 2], convection_coefficient=0.0, simulate_all_link_temperatures=True,
                    properties_dict=props),
               grid("tg2", "pad2", grid_size=[2, 2, 1])]
    suite = make(sensors, [pad(), pad("pad2", xyz=(0.0, 0.0, PAD[2]))], dt=dt)
    c1, c2 = RHO_C * VOLUME / 8, RHO_C * VOLUME / 4
    e0 = c1 * 8 * 80.0 + c2 * 4 * 20.0
    for k in range(1, 15):
        suite.update(k * dt)
        t1, t2 = suite.read_ground_truth("tg").numpy(), suite.read_ground_truth("tg2").numpy()
        np.testing.assert_allclose(c1 * t1.sum() + c2 * t2.sum(), e0, rtol=1e-13)
        assert t1.min() >= 20.0 and t2.max() <= 80.0
    assert t1.mean() < 79.0 and t2.mean() > 21.0


def test_grid_geometry_accessors():
    suite = make([grid(grid_size=[4, 2, 1], properties_dict={"pad": material()})], [pad()], n_envs=3)
    batch = suite.locate("tg")[0]
    np.testing.assert_allclose(batch.grid_origin(0), [-0.05, -0.05, -0.01])
    np.testing.assert_allclose(batch.cell_size(0), [0.025, 0.05, 0.02])
    centres = batch.cell_centers(0).numpy()
    assert centres.shape == (4, 2, 1, 3)
    np.testing.assert_allclose(centres[3, 1, 0], [0.0375, 0.025, 0.0])
    suite.update(1.0)
    assert suite.read("tg").shape == (3, 4, 2, 1)
    assert batch.link_temperatures(0) == {}


# ------------------------------------------------------------------ 6. errors
@pytest.mark.parametrize("sensors, objects, match", [
    ([grid(properties_dict={"padd": material()})], [pad()], r"properties_dict: unknown body 'padd'"),
    ([grid(properties_dict={"other": material()})], [pad(), pad("other", xyz=(1, 0, 0))],
     r"properties_dict: no material for the sensor link 'pad'"),
    ([grid(link="ground", properties_dict={"default": material()})], [{"name": "ground", "geometry": [{"plane": {}}]}],
     r"link: the collision bounding box of 'ground' has a zero or infinite extent"),
    ([grid(link="empty", properties_dict={"default": material()})], [{"name": "empty"}],
     r"link: body 'empty' has no collision geometry"),
])
def test_build_errors_name_the_option(sensors, objects, match):
    with pytest.raises(ConfigError, match=match):
        make(sensors, objects)


def test_object_material_and_conflicting_entry():
    cfg = {"suite": {"dt": 1.0, "dtype": "float64"}, "materials": {"steel": material(60.0, conductivity=40.0)},
           "objects": [{**pad(), "material": "steel"}], "sensors": [grid(convection_coefficient=0.0)]}
    suite = SensorSuite.from_yaml(cfg)
    suite.update(1.0)
    assert suite.read("tg").item() == pytest.approx(60.0, abs=1e-12)
    cfg["sensors"] = [grid(properties_dict={"pad": material(10.0)})]
    with pytest.raises(ConfigError, match=r"properties_dict\.pad: contradicts the material of object 'pad'"):
        SensorSuite.from_yaml(cfg)


def test_inline_object_material_is_its_own_beside_a_named_material_of_its_name():
    # an object's inline material is the object's, even where the configuration also names a material after the
    # object (it read that named material instead)
    cfg = {"suite": {"dt": 1.0, "dtype": "float64"}, "materials": {"pad": material(60.0, conductivity=40.0)},
           "objects": [{**pad(), "material": material(20.0, conductivity=40.0)}],
           "sensors": [grid(convection_coefficient=0.0)]}
    suite = SensorSuite.from_yaml(cfg)
    suite.update(1.0)
    assert suite.read("tg").item() == pytest.approx(20.0, abs=1e-12)
