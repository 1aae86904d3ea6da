"""Robot description from a URDF: links, joints, inertials and collision/visual geometry as :class:`Shape`.

The XML is read strictly with lxml (no silent recovery from malformed files, line numbers in every message; a
capsule element is accepted, which yourdfpy cannot parse). Everything is float64 NumPy; the torch side lives in
:mod:`.kinematics` and :mod:`.dynamics`.

Degrees of freedom: the **movable** joints (revolute, continuous, prismatic) in URDF document order; the
**actuated** joints are the movable joints without ``<mimic>`` (the independent inputs of forward kinematics). A
mimic joint follows q = multiplier · q_source + offset (chains of mimics are resolved to an actuated source).
"""

from __future__ import annotations

import enum
import math
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lxml import etree

from ..constants import MESH_SCALE_RANGE
from ..errors import SceneError
from ..geometry.shapes import MeshData, Shape, ShapeKind
from ..geometry.transforms import rpy_to_matrix_np
from ..text_files import read_file_bytes
from .resources import PackageResolver, resolve_resource

GEOMETRY_GROUPS = ("collision", "visual")

INERTIA_CHECKS = ("error", "warn", "off")
"""What :meth:`RobotModel.from_urdf` does with a physically invalid ``<inertial>``: raise, warn, or nothing."""

INERTIA_REL_TOL = 1e-6
"""Relative tolerance (of the largest principal moment) of the inertia checks: rounding in a URDF passes."""


class JointType(str, enum.Enum):
    """Supported URDF joint types (floating and planar are rejected)."""

    REVOLUTE = "revolute"
    CONTINUOUS = "continuous"
    PRISMATIC = "prismatic"
    FIXED = "fixed"

    @property
    def movable(self) -> bool:
        return self is not JointType.FIXED

    @property
    def rotational(self) -> bool:
        return self in (JointType.REVOLUTE, JointType.CONTINUOUS)


@dataclass(frozen=True)
class Mimic:
    """``q = multiplier · q[joint] + offset`` (joint: the source joint's name as written in the URDF)."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True, eq=False)
class Inertial:
    """Rigid-body inertia of a link: mass kg; COM position com (3,) m and inertial-frame rotation rot (3, 3), both in
    the link frame; inertia (3, 3) kg·m² about the COM in the inertial frame."""

    mass: float
    com: np.ndarray
    rot: np.ndarray
    inertia: np.ndarray

    @property
    def inertia_link_axes(self) -> np.ndarray:
        """Inertia about the COM expressed in link-frame axes: R I Rᵀ, (3, 3) kg·m²."""
        return self.rot @ self.inertia @ self.rot.T


@dataclass(frozen=True, eq=False)
class Link:
    """A URDF link. collision / visual: shapes in document order, or None when that group was not loaded."""

    name: str
    inertial: Inertial
    collision: tuple[Shape, ...] | None
    visual: tuple[Shape, ...] | None


@dataclass(frozen=True, eq=False)
class Joint:
    """A URDF joint. rot (3, 3) / pos (3,): joint frame in the parent link frame (the child link frame at q = 0);
    axis (3,) unit vector in the joint frame; limits in rad or m (continuous: ±inf), effort N·m or N, velocity rad/s
    or m/s (inf when not given); damping N·m·s/rad or N·s/m, friction N·m or N (``<dynamics>``, 0 when absent)."""

    name: str
    type: JointType
    parent: str
    child: str
    rot: np.ndarray
    pos: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    effort: float
    velocity: float
    damping: float
    friction: float
    mimic: Mimic | None


class RobotModel:
    """A kinematic tree parsed from a URDF.

    links / joints: in document order. root_link: the only link without a parent joint.
    movable_joint_names (n_mov) and actuated_joint_names (n_act): see the module docstring.
    movable_source (n_mov,) int64: index into the actuated joints that drives each movable joint;
    movable_multiplier / movable_offset (n_mov,) float64: q_mov = multiplier · q_act[source] + offset.
    topological_order: link indices, every parent before its children.
    """

    def __init__(self, name: str, links: list[Link], joints: list[Joint], source: str = "<string>"):
        self.name = name
        self.source = source
        self.links = tuple(links)
        self.joints = tuple(joints)
        self.link_names = tuple(link.name for link in links)
        self.joint_names = tuple(j.name for j in joints)
        self._link_index = {n: i for i, n in enumerate(self.link_names)}
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        self._parent_joint = {j.child: j for j in joints}
        self._children: dict[str, list[str]] = {n: [] for n in self.link_names}
        for j in joints:
            self._children[j.parent].append(j.child)
        roots = [n for n in self.link_names if n not in self._parent_joint]
        self.root_link = roots[0]
        order, stack = [], [self.root_link]
        while stack:
            name = stack.pop()
            order.append(self._link_index[name])
            stack.extend(reversed(self._children[name]))
        self.topological_order = tuple(order)

        self.movable_joint_names = tuple(j.name for j in joints if j.type.movable)
        self.actuated_joint_names = tuple(j.name for j in joints if j.type.movable and j.mimic is None)
        act_index = {n: i for i, n in enumerate(self.actuated_joint_names)}
        src, mul, off = [], [], []
        for name in self.movable_joint_names:
            m, o, j = 1.0, 0.0, self.joint(name)
            while j.mimic is not None:  # chains were checked for cycles at parse time
                # q = m q_j + o with q_j = k q_src + c  →  q = (m k) q_src + (m c + o)
                m, o = m * j.mimic.multiplier, m * j.mimic.offset + o
                j = self.joint(j.mimic.joint)
            src.append(act_index[j.name])
            mul.append(m)
            off.append(o)
        self.movable_source = np.asarray(src, dtype=np.int64)
        self.movable_multiplier = np.asarray(mul, dtype=np.float64)
        self.movable_offset = np.asarray(off, dtype=np.float64)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(cls, urdf: str | os.PathLike, *, search_paths: Iterable = (),
                  package_resolver: PackageResolver | None = None,
                  geometry: Iterable[str] = GEOMETRY_GROUPS, inertia_check: str = "error") -> RobotModel:
        """Parse a URDF given as an XML string or a file path.

        search_paths: folders searched for ``package://pkg/…`` (as ``<sp>/pkg/…`` and ``<sp>/…``) and for relative
        mesh paths; package_resolver: package name → share folder, tried first. geometry: which groups of
        ``<collision>`` / ``<visual>`` shapes to build (a group left out is None on every link: no meshes are read
        for it). inertia_check: "error" (default), "warn" or "off" for a physically invalid ``<inertial>`` (see
        :meth:`_UrdfReader.check_inertia`). Raises SceneError naming the file, line and element for every problem.
        """
        groups = tuple(geometry)
        bad = [g for g in groups if g not in GEOMETRY_GROUPS]
        if bad:
            raise ValueError(f"RobotModel.from_urdf: geometry: unknown group(s) {bad}; allowed: {list(GEOMETRY_GROUPS)}")
        if inertia_check not in INERTIA_CHECKS:
            raise ValueError(f"RobotModel.from_urdf: inertia_check: got {inertia_check!r}; allowed: {INERTIA_CHECKS}")
        text, source, base_dir = _read_source(urdf)
        return _UrdfReader(text, source, base_dir, tuple(search_paths), package_resolver, groups,
                           inertia_check).read()

    # ------------------------------------------------------------------ look-ups
    def link_index(self, name: str) -> int:
        try:
            return self._link_index[name]
        except KeyError:
            raise SceneError(f"robot {self.name!r}: no link {name!r}; links: {list(self.link_names)}") from None

    def joint(self, name: str) -> Joint:
        try:
            return self.joints[self._joint_index[name]]
        except KeyError:
            raise SceneError(f"robot {self.name!r}: no joint {name!r}; joints: {list(self.joint_names)}") from None

    def link(self, name: str) -> Link:
        return self.links[self.link_index(name)]

    def parent_joint(self, link: str) -> Joint | None:
        """The joint whose child is ``link`` (None for the root)."""
        self.link_index(link)
        return self._parent_joint.get(link)

    def child_links(self, link: str) -> tuple[str, ...]:
        """Links attached below ``link`` by one joint, in document order of their joints."""
        self.link_index(link)
        return tuple(self._children[link])

    @property
    def n_links(self) -> int:
        return len(self.links)

    @property
    def n_movable(self) -> int:
        return len(self.movable_joint_names)

    @property
    def n_actuated(self) -> int:
        return len(self.actuated_joint_names)

    def __repr__(self) -> str:
        return (f"RobotModel({self.name!r}, links={self.n_links}, movable={self.n_movable}, "
                f"actuated={self.n_actuated}, source={self.source!r})")


# ---------------------------------------------------------------------------------------------------- parsing
def inertia_problem(mass: float, inertia: np.ndarray) -> str:
    """Why a link's (mass kg, inertia (3, 3) kg·m² about the COM) is not a rigid body's, or "" when it is one.

    An all-zero inertia (point mass or massless link) is accepted; otherwise the mass must be > 0 and the
    principal moments λ1 ≤ λ2 ≤ λ3 must be > 0 and satisfy λ1 + λ2 ≥ λ3, both within :data:`INERTIA_REL_TOL` λ3.
    """
    if not np.any(inertia):
        return ""
    moments = np.linalg.eigvalsh(inertia)
    tol = INERTIA_REL_TOL * max(abs(moments[-1]), abs(moments[0]))
    got = f"got mass {mass:g}, principal moments {', '.join(f'{m:.6g}' for m in moments)}"
    if moments[0] <= tol:
        return f"inertia not positive definite; {got}"
    if moments[0] + moments[1] < moments[2] - tol:
        return f"principal moments break the triangle inequality (l1 + l2 >= l3); {got}"
    if mass <= 0:
        return f"an inertia without mass; {got}"
    return ""


def _read_source(urdf) -> tuple[bytes, str, Path | None]:
    """(XML bytes, name for messages, folder for relative paths or None for a string)."""
    if isinstance(urdf, str) and urdf.lstrip().startswith("<"):
        return urdf.encode("utf-8"), "<urdf string>", None
    path = Path(urdf).expanduser()
    if not path.exists():
        raise SceneError(f"URDF file {str(path)!r} not found; pass an existing file path or the URDF XML text")
    try:
        return read_file_bytes(path, "URDF file"), str(path), path.parent.resolve()
    except ValueError as exc:
        raise SceneError(str(exc)) from None


class _UrdfReader:
    """One strict pass over a URDF document."""

    def __init__(self, text: bytes, source: str, base_dir: Path | None, search_paths: tuple,
                 package_resolver: PackageResolver | None, groups: tuple[str, ...], inertia_check: str = "error"):
        self.text, self.source, self.base_dir = text, source, base_dir
        self.inertia_check = inertia_check
        self.search_paths, self.package_resolver, self.groups = search_paths, package_resolver, groups
        self._meshes: dict[tuple[Path, tuple[float, float, float]], MeshData] = {}

    # -------------------------------------------------------------- helpers
    def where(self, elem, what: str = "") -> str:
        loc = f"{self.source}:{elem.sourceline}" if elem is not None and elem.sourceline else self.source
        return f"{loc}: {what}" if what else loc

    def fail(self, elem, what: str, msg: str):
        raise SceneError(f"{self.where(elem, what)}: {msg}")

    def floats(self, elem, attr: str, what: str, n: int | tuple[int, ...], default=None) -> list[float]:
        raw = elem.get(attr) if elem is not None else None
        if raw is None:
            if default is None:
                self.fail(elem, what, f"missing attribute {attr!r}")
            return list(default)
        try:
            vals = [float(v) for v in raw.replace(",", " ").split()]
        except ValueError:
            self.fail(elem, what, f"attribute {attr!r} must be numbers; got {raw!r}")
        counts = (n,) if isinstance(n, int) else n
        if len(vals) not in counts:
            self.fail(elem, what, f"attribute {attr!r} needs {' or '.join(map(str, counts))} number(s); got {raw!r}")
        if not all(math.isfinite(v) for v in vals):
            self.fail(elem, what, f"attribute {attr!r} must be finite; got {raw!r}")
        return vals

    def origin(self, elem, what: str) -> tuple[np.ndarray, np.ndarray]:
        o = elem.find("origin")
        if o is None:
            return np.eye(3), np.zeros(3)
        xyz = self.floats(o, "xyz", f"{what} <origin>", 3, (0.0, 0.0, 0.0))
        rpy = self.floats(o, "rpy", f"{what} <origin>", 3, (0.0, 0.0, 0.0))
        return rpy_to_matrix_np(rpy), np.asarray(xyz, dtype=np.float64)

    # -------------------------------------------------------------- document
    def read(self) -> RobotModel:
        parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True)
        try:
            root = etree.fromstring(self.text, parser=parser)
        except etree.XMLSyntaxError as e:
            raise SceneError(f"{self.source}: malformed XML: {e}; fix the URDF (run it through xacro first if it "
                             "is a .xacro file)") from None
        if root.tag != "robot":
            self.fail(root, f"<{root.tag}>", "the root element must be <robot>")
        name = root.get("name") or ""
        links, link_elems, joints, joint_elems = [], {}, [], {}
        for elem in root:
            if elem.tag == "link":
                link = self.link(elem)
                if link.name in link_elems:
                    self.fail(elem, f"<link name={link.name!r}>",
                              f"duplicate link name (first at line {link_elems[link.name].sourceline})")
                link_elems[link.name] = elem
                links.append(link)
            elif elem.tag == "joint":
                joint = self.joint(elem)
                if joint.name in joint_elems:
                    self.fail(elem, f"<joint name={joint.name!r}>",
                              f"duplicate joint name (first at line {joint_elems[joint.name].sourceline})")
                joint_elems[joint.name] = elem
                joints.append(joint)
        if not links:
            self.fail(root, "<robot>", "no <link> elements")
        self.check_tree(links, joints, joint_elems)
        self.check_mimics(joints, joint_elems)
        return RobotModel(name, links, joints, self.source)

    def check_tree(self, links: list[Link], joints: list[Joint], joint_elems: dict):
        names = [link.name for link in links]
        known = set(names)
        parent_of: dict[str, Joint] = {}
        for j in joints:
            what = f"<joint name={j.name!r}>"
            for role, link in (("parent", j.parent), ("child", j.child)):
                if link not in known:
                    self.fail(joint_elems[j.name], what, f"{role} link {link!r} is not defined; links: {names}")
            if j.child in parent_of:
                self.fail(joint_elems[j.name], what, f"link {j.child!r} already has parent joint "
                          f"{parent_of[j.child].name!r}; a link has at most one parent")
            if j.parent == j.child:
                self.fail(joint_elems[j.name], what, f"parent and child are the same link {j.child!r}")
            parent_of[j.child] = j
        roots = [n for n in names if n not in parent_of]
        if len(roots) != 1:
            msg = ("no root link: the joints form a closed loop" if not roots
                   else f"several root links {roots}; a URDF is one tree: connect them with joints")
            raise SceneError(f"{self.source}: {msg}")
        for n in names:  # every link must reach the root (a cycle below the root would not)
            seen, cur = set(), n
            while cur in parent_of:
                if cur in seen:
                    raise SceneError(f"{self.source}: closed kinematic loop through link {cur!r}")
                seen.add(cur)
                cur = parent_of[cur].parent

    def check_mimics(self, joints: list[Joint], joint_elems: dict):
        by_name = {j.name: j for j in joints}
        for j in joints:
            if j.mimic is None:
                continue
            what = f"<joint name={j.name!r}> <mimic>"
            if not j.type.movable:
                self.fail(joint_elems[j.name], what, "a fixed joint cannot mimic another joint")
            seen, cur = {j.name}, j
            while cur.mimic is not None:
                src = by_name.get(cur.mimic.joint)
                if src is None:
                    self.fail(joint_elems[cur.name], what, f"source joint {cur.mimic.joint!r} is not defined")
                if not src.type.movable:
                    self.fail(joint_elems[cur.name], what, f"source joint {src.name!r} is fixed; it must be movable")
                if src.name in seen:
                    self.fail(joint_elems[j.name], what, f"mimic chain loops back to joint {src.name!r}")
                seen.add(src.name)
                cur = src

    # -------------------------------------------------------------- links
    def link(self, elem) -> Link:
        name = elem.get("name")
        if not name:
            self.fail(elem, "<link>", "missing attribute 'name'")
        what = f"<link name={name!r}>"
        inertial = self.inertial(elem.find("inertial"), what)
        shapes = {}
        for group in GEOMETRY_GROUPS:
            if group in self.groups:
                shapes[group] = tuple(self.shape(e, name, f"{group}[{i}]")
                                      for i, e in enumerate(elem.findall(group)))
            else:
                shapes[group] = None
        return Link(name, inertial, shapes["collision"], shapes["visual"])

    def inertial(self, elem, what: str) -> Inertial:
        if elem is None:
            return Inertial(0.0, np.zeros(3), np.eye(3), np.zeros((3, 3)))
        what = f"{what} <inertial>"
        rot, com = self.origin(elem, what)
        mass_el = elem.find("mass")
        if mass_el is None:
            self.fail(elem, what, "missing <mass>")
        (mass,) = self.floats(mass_el, "value", f"{what} <mass>", 1)
        if mass < 0:
            self.fail(mass_el, f"{what} <mass>", f"negative mass; got {mass}; allowed: >= 0")
        inertia_el = elem.find("inertia")
        if inertia_el is None:
            self.fail(elem, what, "missing <inertia>")
        v = {k: self.floats(inertia_el, k, f"{what} <inertia>", 1)[0]
             for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        inertia = np.array([[v["ixx"], v["ixy"], v["ixz"]],
                            [v["ixy"], v["iyy"], v["iyz"]],
                            [v["ixz"], v["iyz"], v["izz"]]], dtype=np.float64)
        problem = inertia_problem(mass, inertia) if self.inertia_check != "off" else ""
        if problem and self.inertia_check == "error":
            self.fail(inertia_el, f"{what} <inertia>", f"{problem}; allowed: a positive definite inertia whose "
                      "principal moments satisfy the triangle inequality, with mass > 0 (all zero for a point "
                      "mass); or set robot.inertia_check: warn")
        if problem and self.inertia_check == "warn":
            warnings.warn(f"{self.where(inertia_el, what + ' <inertia>')}: {problem}; used as given", stacklevel=2)
        return Inertial(mass, com, rot, inertia)

    def shape(self, elem, link: str, label: str) -> Shape:
        what = f"<link name={link!r}> <{label.split('[')[0]}>"
        shape_name = f"{link}:{label}"
        rot, pos = self.origin(elem, what)
        geom = elem.find("geometry")
        if geom is None or len(geom) != 1:
            self.fail(geom if geom is not None else elem, what,
                      "<geometry> must hold exactly one of <box>, <cylinder>, <sphere>, <capsule>, <mesh>")
        g = geom[0]
        gwhat = f"{what} <{g.tag}>"
        if g.tag == "box":
            size = self.floats(g, "size", gwhat, 3)
            kind, dims, mesh = ShapeKind.BOX, tuple(s / 2 for s in size), None
        elif g.tag == "sphere":
            kind, dims, mesh = ShapeKind.SPHERE, tuple(self.floats(g, "radius", gwhat, 1)), None
        elif g.tag in ("cylinder", "capsule"):
            r = self.floats(g, "radius", gwhat, 1)[0]
            length = self.floats(g, "length", gwhat, 1)[0]
            kind = ShapeKind.CYLINDER if g.tag == "cylinder" else ShapeKind.CAPSULE
            dims, mesh = (r, length), None
        elif g.tag == "mesh":
            kind, dims, mesh = ShapeKind.MESH, (), self.mesh(g, gwhat)
        else:
            self.fail(g, gwhat, "unknown geometry; allowed: box, cylinder, sphere, capsule, mesh")
        try:
            return Shape(kind, dims, mesh=mesh, rot=rot, pos=pos, name=shape_name)
        except SceneError as e:
            raise SceneError(f"{self.where(g, gwhat)}: {e}") from None

    def mesh(self, elem, what: str) -> MeshData:
        uri = elem.get("filename")
        if not uri:
            self.fail(elem, what, "missing attribute 'filename'")
        sc = self.floats(elem, "scale", what, (1, 3), (1.0, 1.0, 1.0))
        scale = (sc[0],) * 3 if len(sc) == 1 else tuple(sc)
        low, high = MESH_SCALE_RANGE
        if not all(low <= abs(s) <= high for s in scale):
            self.fail(elem, what, f"mesh scale factors must be {low:g} to {high:g} in size (a negative one mirrors); "
                                  f"got {scale}")
        path = resolve_resource(uri, base_dir=self.base_dir, search_paths=self.search_paths,
                                package_resolver=self.package_resolver, where=self.where(elem, what))
        key = (path.resolve(), scale)
        if key not in self._meshes:
            from ..geometry.mesh_io import load_mesh  # geometry I/O is only needed for meshes

            self._meshes[key] = load_mesh(path, scale=scale)
        return self._meshes[key]

    # -------------------------------------------------------------- joints
    def joint(self, elem) -> Joint:
        name = elem.get("name")
        if not name:
            self.fail(elem, "<joint>", "missing attribute 'name'")
        what = f"<joint name={name!r}>"
        jtype = elem.get("type")
        if jtype in ("floating", "planar"):
            self.fail(elem, what, f"joint type {jtype!r} is unsupported; allowed: revolute, continuous, "
                      "prismatic, fixed (a floating base is posed through the root pose / TF instead)")
        try:
            jt = JointType(jtype)
        except ValueError:
            self.fail(elem, what, f"unknown joint type {jtype!r}; allowed: revolute, continuous, prismatic, fixed")
        links = {}
        for role in ("parent", "child"):
            e = elem.find(role)
            if e is None or not e.get("link"):
                self.fail(elem, what, f"missing <{role} link='…'/>")
            links[role] = e.get("link")
        rot, pos = self.origin(elem, what)
        axis_el = elem.find("axis")
        axis = np.asarray(self.floats(axis_el, "xyz", f"{what} <axis>", 3, (1.0, 0.0, 0.0)), dtype=np.float64)
        if jt.movable:
            n = float(np.linalg.norm(axis))
            if n == 0.0:
                self.fail(axis_el, f"{what} <axis>", f"axis must be non-zero; got {axis.tolist()}")
            axis = axis / n
        lower, upper, effort, velocity = -math.inf, math.inf, math.inf, math.inf
        lim = elem.find("limit")
        if jt in (JointType.REVOLUTE, JointType.PRISMATIC) and lim is None:
            self.fail(elem, what, f"a {jt.value} joint needs <limit effort=… velocity=… [lower=… upper=…]/>")
        if lim is not None and jt.movable:
            effort = self.floats(lim, "effort", f"{what} <limit>", 1)[0]
            velocity = self.floats(lim, "velocity", f"{what} <limit>", 1)[0]
            if jt is not JointType.CONTINUOUS:
                lower = self.floats(lim, "lower", f"{what} <limit>", 1, (0.0,))[0]
                upper = self.floats(lim, "upper", f"{what} <limit>", 1, (0.0,))[0]
                if lower > upper:
                    self.fail(lim, f"{what} <limit>", f"lower {lower} > upper {upper}")
        dyn = elem.find("dynamics")
        damping = self.floats(dyn, "damping", f"{what} <dynamics>", 1, (0.0,))[0] if dyn is not None else 0.0
        friction = self.floats(dyn, "friction", f"{what} <dynamics>", 1, (0.0,))[0] if dyn is not None else 0.0
        mimic = None
        mim = elem.find("mimic")
        if mim is not None:
            if not mim.get("joint"):
                self.fail(mim, f"{what} <mimic>", "missing attribute 'joint'")
            mimic = Mimic(mim.get("joint"), self.floats(mim, "multiplier", f"{what} <mimic>", 1, (1.0,))[0],
                          self.floats(mim, "offset", f"{what} <mimic>", 1, (0.0,))[0])
        return Joint(name, jt, links["parent"], links["child"], rot, pos, axis, lower, upper, effort, velocity,
                     damping, friction, mimic)
