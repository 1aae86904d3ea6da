"""Layouts stored in CSV / NPY files (load_layout_file): round trips and error messages naming the file."""

import re
import tracemalloc

import numpy as np
import pytest

from helpers_layout import raises_config_error
from tactile_sim.config.option_docs import OPTION_DOCS
from tactile_sim.sensors.layout.probe_layout import ProbeLayout, load_layout_file

W = "pads.yaml:sensors[0].probe_local_pos"


@pytest.fixture
def probes():
    rng = np.random.default_rng(7)
    pos = rng.uniform(-0.05, 0.05, size=(6, 3))
    radius = rng.uniform(0.001, 0.004, size=6)
    normals = rng.normal(size=(6, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return pos, radius, normals


@pytest.mark.parametrize("cols", [3, 4, 7])
def test_csv_round_trip_without_header(tmp_path, probes, cols):
    pos, radius, normals = probes
    table = np.concatenate([pos, radius[:, None], normals], axis=1)[:, :cols]
    f = tmp_path / "layout.csv"
    np.savetxt(f, table, delimiter=",", fmt="%.17g", header="exported taxels")  # '# exported taxels' comment line
    data = load_layout_file(f, W)
    np.testing.assert_array_equal(data.positions, pos)
    if cols >= 4:
        np.testing.assert_array_equal(data.radius, radius)
    else:
        assert data.radius is None
    if cols == 7:
        np.testing.assert_array_equal(data.normals, normals)
    else:
        assert data.normals is None


def test_csv_whitespace_separated(tmp_path, probes):
    pos = probes[0]
    f = tmp_path / "layout.txt"
    np.savetxt(f, pos, fmt="%.17g")
    np.testing.assert_array_equal(load_layout_file(f, W).positions, pos)


def test_csv_header_with_named_columns_builds_a_grid(tmp_path):
    # a 2 x 3 grid given out of order, with columns in another order and one filler
    lines = ["row, z, col, x, y, radius, nx, ny, nz"]
    expected = np.zeros((2, 3, 3))
    rad = np.zeros((2, 3))
    for r, c in [(1, 2), (0, 0), (1, 0), (0, 2), (0, 1), (1, 1)]:
        p = (0.01 * c, 0.02 * r, 0.001)
        expected[r, c] = p
        rad[r, c] = 0.0 if (r, c) == (1, 1) else 0.002
        lines.append(f"{r}, {p[2]}, {c}, {p[0]}, {p[1]}, {rad[r, c]}, 0, 0, 1")
    f = tmp_path / "grid.csv"
    f.write_text("\n".join(lines) + "\n")
    data = load_layout_file(f, W)
    np.testing.assert_array_equal(data.positions, expected)
    np.testing.assert_array_equal(data.radius, rad)
    np.testing.assert_array_equal(data.normals, np.broadcast_to([0.0, 0.0, 1.0], (2, 3, 3)))
    lay = ProbeLayout.from_options(data.positions, data.radius, data.normals)
    assert lay.shape == (2, 3) and lay.grid.regular


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (2, 4, 4), (5, 7)])
def test_npy_round_trip(tmp_path, shape):
    a = np.random.default_rng(2).normal(size=shape)
    f = tmp_path / "layout.npy"
    np.save(f, a)
    data = load_layout_file(str(f), W)
    np.testing.assert_array_equal(data.positions, a[..., :3])
    assert (data.radius is None) == (shape[-1] < 4)
    if shape[-1] >= 4:
        np.testing.assert_array_equal(data.radius, a[..., 3])
    if shape[-1] == 7:
        np.testing.assert_array_equal(data.normals, a[..., 4:7])


def test_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.csv"
    raises_config_error(lambda: load_layout_file(missing, W), W, f"'{missing}'", "not found", "allowed:")
    raises_config_error(lambda: load_layout_file(tmp_path / "a.json", W), W, "a.json", "unsupported extension",
                        "got '.json'", "allowed: .csv, .txt, .npy")

    f = tmp_path / "bad.csv"
    f.write_text("0, 0, 0\n1, 2\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "line 2 has 2 columns", "allowed: 3")
    f.write_text("0 0 0 0 0\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "line 1 has 5 columns", "allowed: 3 (x y z)")
    f.write_text("x, y, z\n0, 0, 0\n1, zero, 0\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "line 3 has a non-numeric field", "allowed:")
    f.write_text("x, y, depth\n0, 0, 0\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "bad header", "got ['x', 'y', 'depth']", "allowed:")
    f.write_text("x, y, z, nx\n0, 0, 0, 1\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "bad header", "nx, ny, nz together")
    f.write_text("# only a comment\n\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "no probe lines", "allowed:")
    f.write_text("row, col, x, y, z\n0, 0, 0, 0, 0\n0, 0, 1, 0, 0\n1, 1, 0, 1, 0\n1, 0, 1, 1, 0\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "grid cell [0, 0] appears 2 times",
                        "exactly once")
    f.write_text("row, col, x, y, z\n0, 0, 0, 0, 0\n100000, 100000, 1, 0, 0\n")  # no 74.5 GiB count grid
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "a 100001 x 100001 grid of 10000200001 cells for 2 "
                        "probe lines", "exactly once")
    f.write_text("row, col, x, y, z\n0, 0.5, 0, 0, 0\n")
    raises_config_error(lambda: load_layout_file(f, W), f"'{f}'", "row/col must be integers", "allowed:")

    g = tmp_path / "bad.npy"
    np.save(g, np.zeros((4, 5)))
    raises_config_error(lambda: load_layout_file(g, W), f"'{g}'", "got shape (4, 5)", "allowed:")
    g.write_bytes(b"not an npy file")
    raises_config_error(lambda: load_layout_file(g, W), f"'{g}'", "cannot be read", "allowed:")


def test_csv_over_the_probe_cap_is_refused_with_or_without_a_header(tmp_path):
    f = tmp_path / "many.csv"
    probe = "0.01, 0, 0\n"
    for text, ok in [(probe * 5, True), (probe * 6, False), ("x, y, z\n" + probe * 5, True),
                     ("x, y, z\n" + probe * 6, False), ("# comments and blank lines are not probes\n\n" * 9 + probe * 5,
                                                        True)]:
        f.write_text(text)
        if ok:
            assert load_layout_file(f, W, max_probes=5).positions.shape == (5, 3)
        else:
            raises_config_error(lambda: load_layout_file(f, W, max_probes=5), W, f"'{f}'", "too many probes",
                                "got more than 5 probe lines", "allowed: at most 5 probes per sensor")


def test_csv_over_the_probe_cap_is_refused_before_its_lines_are_parsed(tmp_path):
    # the 7th line, past a cap of 5 (and a possible header), would be a parse error if it were read
    f = tmp_path / "many.csv"
    f.write_text("0.01, 0, 0\n" * 6 + "zero, 0, 0\n" + "0, 0\n" * 1000)
    raises_config_error(lambda: load_layout_file(f, W, max_probes=5), f"'{f}'", "too many probes",
                        "got more than 5 probe lines")


def test_csv_over_the_probe_cap_keeps_no_per_line_objects(tmp_path):
    # 200 000 lines of a 1.2 MB file: parsed lines would take tens of MB, the refusal takes the file's text only
    f = tmp_path / "many.csv"
    f.write_text("0 0 0\n" * 200_000)
    tracemalloc.start()
    try:
        raises_config_error(lambda: load_layout_file(f, W, max_probes=100_000), "too many probes",
                            "got more than 100000 probe lines")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * f.stat().st_size, peak


@pytest.mark.parametrize("header", ["", "x, y, z\n"])
def test_csv_with_a_utf8_byte_order_mark(tmp_path, header):
    f = tmp_path / "bom.csv"
    f.write_bytes(("\ufeff" + header + "0.01, 0, 0\n0, 0.02, 0\n").encode("utf-8"))
    np.testing.assert_array_equal(load_layout_file(f, W).positions, [[0.01, 0, 0], [0, 0.02, 0]])


def test_file_layout_option_doc_names_exactly_the_extensions_the_loader_accepts(tmp_path):
    msg = raises_config_error(lambda: load_layout_file(tmp_path / "a.json", W), "allowed: ")
    accepted = set(re.findall(r"\.\w+", msg.split("allowed: ")[1]))
    meaning = OPTION_DOCS["FileLayout.file"].meaning
    assert set(re.findall(r"`(\.\w+)`", meaning)) == accepted == {".csv", ".txt", ".npy"}
    for ext in accepted:  # each one reaches its reader (here: the file is missing)
        assert "unsupported extension" not in raises_config_error(lambda: load_layout_file(tmp_path / f"a{ext}", W))
    assert "x, y, z [, radius [, nx, ny, nz]]" in meaning and "`row`, `col`" in meaning
