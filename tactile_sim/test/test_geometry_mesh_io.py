"""Mesh loading: formats, scale, scene merging, content hash, errors and the non-watertight warning."""

from __future__ import annotations

import hashlib
import re
import warnings

import numpy as np
import pytest
import trimesh

from tactile_sim.errors import SceneError
from tactile_sim.geometry.mesh_io import load_mesh, make_mesh_data

HALF = np.array([0.02, 0.03, 0.05])


@pytest.mark.parametrize("ext", ["stl", "obj", "dae"])
def test_formats_load_as_one_watertight_mesh(ext, tmp_path):
    if ext == "dae":
        pytest.importorskip("collada", reason="COLLADA needs pycollada")
    path = tmp_path / f"box.{ext}"
    trimesh.creation.box(extents=2 * HALF).export(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mesh = load_mesh(path)
    assert mesh.faces.shape == (12, 3) and mesh.vertices.shape == (8, 3)
    assert mesh.watertight and mesh.source == str(path)
    np.testing.assert_allclose(mesh.vertices.min(0), -HALF, atol=1e-6)
    np.testing.assert_allclose(mesh.volume, 8 * np.prod(HALF), rtol=1e-5)
    digest = hashlib.sha256(mesh.vertices.astype("<f8").tobytes() + mesh.faces.astype("<i8").tobytes()).hexdigest()
    assert mesh.content_hash == digest


def test_scale_per_axis_and_mirroring_keeps_faces_outward(tmp_path):
    path = tmp_path / "box.stl"
    trimesh.creation.box(extents=2 * HALF).export(path)
    scaled = load_mesh(path, scale=(2.0, 1.0, 0.5))
    np.testing.assert_allclose(scaled.vertices.max(0), HALF * [2.0, 1.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(load_mesh(path, scale=3.0).vertices.max(0), 3 * HALF, atol=1e-6)
    mirrored = load_mesh(path, scale=(-1.0, 1.0, 1.0))
    assert trimesh.Trimesh(mirrored.vertices, mirrored.faces, process=False).volume > 0  # outward orientation
    assert mirrored.content_hash != load_mesh(path).content_hash


def _write_two_box_collada(path, offset):
    """A COLLADA file with two 2 cm cubes in two nodes, the second translated by ``offset`` (node matrix)."""
    collada = pytest.importorskip("collada", reason="COLLADA needs pycollada")
    doc = collada.Collada()
    box = trimesh.creation.box(extents=[0.02] * 3)
    nodes = []
    for i, shift in enumerate([(0.0, 0.0, 0.0), offset]):
        src = collada.source.FloatSource(f"v{i}", box.vertices.reshape(-1), ("X", "Y", "Z"))
        geom = collada.geometry.Geometry(doc, f"g{i}", f"box{i}", [src])
        inputs = collada.source.InputList()
        inputs.addInput(0, "VERTEX", f"#v{i}")
        geom.primitives.append(geom.createTriangleSet(box.faces.reshape(-1).astype(np.int64), inputs, ""))
        doc.geometries.append(geom)
        matrix = np.eye(4)
        matrix[:3, 3] = shift
        nodes.append(collada.scene.Node(f"n{i}", children=[collada.scene.GeometryNode(geom, [])],
                                        transforms=[collada.scene.MatrixTransform(matrix.reshape(-1))]))
    doc.scenes.append(collada.scene.Scene("scene", nodes))
    doc.scene = doc.scenes[0]
    doc.write(str(path))


def test_collada_scene_is_merged_with_node_transforms(tmp_path):
    path = tmp_path / "two.dae"
    _write_two_box_collada(path, (0.1, 0.0, 0.0))
    mesh = load_mesh(path)
    assert len(mesh.faces) == 24
    np.testing.assert_allclose(mesh.vertices.max(0), [0.11, 0.01, 0.01], atol=1e-9)
    np.testing.assert_allclose(mesh.vertices.min(0), [-0.01, -0.01, -0.01], atol=1e-9)


def test_missing_unreadable_and_bad_scale_name_the_file(tmp_path):
    missing = tmp_path / "nope.stl"
    with pytest.raises(SceneError, match=f"{missing}: mesh file not found"):
        load_mesh(missing)
    garbage = tmp_path / "garbage.stl"
    garbage.write_bytes(b"\x00\x01 definitely not a mesh")
    with pytest.raises(SceneError, match=f"{garbage}: "):
        load_mesh(garbage)
    path = tmp_path / "box.stl"
    trimesh.creation.box().export(path)
    with pytest.raises(SceneError, match=f"{path}: mesh scale must be 1 or 3 finite non-zero factors"):
        load_mesh(path, scale=(1.0, 0.0, 1.0))


def test_open_mesh_warns_with_the_file_name_and_stays_usable(tmp_path):
    box = trimesh.creation.box(extents=2 * HALF)
    path = tmp_path / "open_box.stl"
    trimesh.Trimesh(box.vertices, box.faces[2:]).export(path)
    with pytest.warns(UserWarning, match=r"open_box\.stl: mesh is not watertight"):
        mesh = load_mesh(path)
    assert not mesh.watertight and len(mesh.faces) == 10


def test_make_mesh_data_rejects_bad_indices():
    with pytest.raises(SceneError, match=r"tri: face vertex index out of range \[0, 3\)"):
        make_mesh_data(np.eye(3), [[0, 1, 3]], source="tri")
    with pytest.raises(SceneError, match="tri: mesh has no triangles"):
        make_mesh_data(np.eye(3), np.zeros((0, 3)), source="tri")


@pytest.mark.parametrize("coordinate, scale, extent", [(1e300, 1.0, "1e+300"), (1e5, 1.0, "100000"),
                                                       (1e-2, 1e-6, "1e-08")])
def test_a_mesh_too_large_or_too_small_is_refused_naming_the_file_without_numpy_warnings(tmp_path, coordinate,
                                                                                           scale, extent):
    path = tmp_path / "tet.obj"  # a tetrahedron `coordinate` m across: its area is a square of it
    path.write_text(f"v 0 0 0\nv {coordinate} 0 0\nv 0 {coordinate} 0\nv 0 0 {coordinate}\n"
                    "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    refused = re.escape(f"{path}: a mesh must be 1e-06 to 10000 m across (after its scale); got {extent} m")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SceneError, match=refused):
            load_mesh(path, scale=scale)
    with pytest.raises(SceneError, match="tet: a mesh must be 1e-06 to 10000 m across"):
        make_mesh_data(np.eye(3) * coordinate * scale, [[0, 1, 2]], source="tet")
    assert len(load_mesh(path, scale=0.5 / coordinate).faces) == 4  # 0.5 m across: accepted
