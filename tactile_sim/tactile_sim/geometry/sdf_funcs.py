"""Warp device functions: signed distance, gradient and closest point of every shape kind
(docs/models/scene.md#signed-distance).

All functions work in the shape frame, in metres, and are generic over the working float type (float32 or float64
vectors ``p``). Each returns ``(sd, grad, closest)``: the signed distance (negative inside), the unit gradient of the
signed distance (the outward normal direction; the zero vector only where the SDF grid gradient vanishes) and the
closest surface point. Where the gradient is undefined (sphere centre, capsule/cylinder axis, exact ties) the lowest
axis index with the + side wins, as docs/models/scene.md#signed-distance states. The kernels that use these
functions live in :mod:`.query` (scene queries) and :mod:`.sdf_grid` (grid node values).
"""

from __future__ import annotations

from typing import Any

import warp as wp

from ..constants import EPS_GRAD, EPS_LEN
from .shapes import ShapeKind

WINDING_INSIDE = 0.49999997
"""Warp tests ``winding > threshold``; this float32 value just below 0.5 makes it ``winding ≥ 0.5``
(docs/models/scene.md#signed-distance)."""

BVH_UNBOUNDED = 1.0e18
"""m — a BVH search radius that never limits a closest-triangle query (its square stays finite in float32)."""

_SPHERE = wp.constant(int(ShapeKind.SPHERE))
_BOX = wp.constant(int(ShapeKind.BOX))
_CAPSULE = wp.constant(int(ShapeKind.CAPSULE))
_CYLINDER = wp.constant(int(ShapeKind.CYLINDER))
_PLANE = wp.constant(int(ShapeKind.PLANE))


@wp.func
def round_segment_sd(p: Any, radius: Any, half_length: Any):
    """Capsule of cap radius ``radius`` around the z segment [−half_length, half_length]; a sphere when it is 0."""
    zero = type(radius)(0.0)
    axis_point = type(p)(zero, zero, wp.clamp(p[2], -half_length, half_length))
    d = p - axis_point
    dist = wp.length(d)
    grad = type(p)(type(radius)(1.0), zero, zero)
    if dist > type(radius)(EPS_LEN):
        grad = d / dist
    return dist - radius, grad, axis_point + grad * radius


@wp.func
def box_sd(p: Any, half: Any):
    """Box of half-extents ``half`` centred at the origin."""
    zero = type(p[0])(0.0)
    one = type(zero)(1.0)
    q = type(p)(wp.abs(p[0]) - half[0], wp.abs(p[1]) - half[1], wp.abs(p[2]) - half[2])
    qmax = wp.max(q[0], wp.max(q[1], q[2]))
    if qmax > zero:
        w = type(p)(wp.max(q[0], zero), wp.max(q[1], zero), wp.max(q[2], zero))
        sd = wp.length(w)
        s = type(p)(wp.sign(p[0]), wp.sign(p[1]), wp.sign(p[2]))
        grad = wp.cw_mul(s, w) / sd
        closest = type(p)(wp.clamp(p[0], -half[0], half[0]), wp.clamp(p[1], -half[1], half[1]),
                          wp.clamp(p[2], -half[2], half[2]))
        return sd, grad, closest
    # inside or on the surface: the face of the largest q wins, lowest axis on ties, + side at p_a = 0
    a = int(0)
    if q[1] > q[a]:
        a = 1
    if q[2] > q[a]:
        a = 2
    side = one
    if p[a] < zero:
        side = -one
    if a == 0:
        return qmax, type(p)(side, zero, zero), type(p)(side * half[0], p[1], p[2])
    if a == 1:
        return qmax, type(p)(zero, side, zero), type(p)(p[0], side * half[1], p[2])
    return qmax, type(p)(zero, zero, side), type(p)(p[0], p[1], side * half[2])


@wp.func
def cylinder_sd(p: Any, radius: Any, half_length: Any):
    """Cylinder of radius ``radius`` and half length ``half_length`` along local z."""
    zero = type(radius)(0.0)
    one = type(zero)(1.0)
    rho = wp.sqrt(p[0] * p[0] + p[1] * p[1])
    radial = type(p)(one, zero, zero)
    if rho > type(radius)(EPS_LEN):
        radial = type(p)(p[0] / rho, p[1] / rho, zero)
    axial = one
    if p[2] < zero:
        axial = -one
    d_rad = rho - radius
    d_ax = wp.abs(p[2]) - half_length
    if d_rad > zero or d_ax > zero:
        w_rad = wp.max(d_rad, zero)
        w_ax = wp.max(d_ax, zero)
        sd = wp.sqrt(w_rad * w_rad + w_ax * w_ax)
        grad = (radial * w_rad + type(p)(zero, zero, axial * w_ax)) / sd
        closest_xy = type(p)(p[0], p[1], zero)
        if rho > radius:
            closest_xy = radial * radius
        closest = closest_xy + type(p)(zero, zero, wp.clamp(p[2], -half_length, half_length))
        return sd, grad, closest
    if d_rad >= d_ax:  # ties: the radial direction (x/y) precedes the axial one (z)
        return d_rad, radial, radial * radius + type(p)(zero, zero, p[2])
    return d_ax, type(p)(zero, zero, axial), type(p)(p[0], p[1], axial * half_length)


@wp.func
def plane_sd(p: Any):
    """Half-space z ≤ 0 with outward normal +z."""
    zero = type(p[0])(0.0)
    return p[2], type(p)(zero, zero, type(zero)(1.0)), type(p)(p[0], p[1], zero)


@wp.func
def primitive_sd(kind: int, size: Any, p: Any):
    """The primitive of ShapeKind ``kind`` (sphere, box, capsule, cylinder, plane) with the size row of the query
    tables (sphere: radius; box: half extents; capsule, cylinder: radius, half length); any other kind gives
    ``(0, p, p)``."""
    zero = type(size[0])(0.0)
    sd = zero
    grad = p
    closest = p
    if kind == _SPHERE:
        sd, grad, closest = round_segment_sd(p, size[0], zero)
    elif kind == _BOX:
        sd, grad, closest = box_sd(p, size)
    elif kind == _CAPSULE:
        sd, grad, closest = round_segment_sd(p, size[0], size[1])
    elif kind == _CYLINDER:
        sd, grad, closest = cylinder_sd(p, size[0], size[1])
    elif kind == _PLANE:
        sd, grad, closest = plane_sd(p)
    return sd, grad, closest


@wp.func
def closest_point_on_triangle(p: Any, a: Any, b: Any, c: Any):
    """Closest point to ``p`` on the triangle (a, b, c) (Voronoi-region walk, working precision)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    zero = type(d1)(0.0)
    if d1 <= zero and d2 <= zero:
        return a
    bp = p - b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= zero and d4 <= d3:
        return b
    vc = d1 * d4 - d3 * d2
    if vc <= zero and d1 >= zero and d3 <= zero:
        return a + ab * (d1 / (d1 - d3))
    cp = p - c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= zero and d5 <= d6:
        return c
    vb = d5 * d2 - d1 * d6
    if vb <= zero and d2 >= zero and d6 <= zero:
        return a + ac * (d2 / (d2 - d6))
    va = d3 * d6 - d5 * d4
    if va <= zero and (d4 - d3) >= zero and (d5 - d6) >= zero:
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))
    denom = va + vb + vc
    return a + ab * (vb / denom) + ac * (vc / denom)


@wp.func
def mesh_exact_sd(mesh_id: wp.uint64, vertices: wp.array(dtype=Any), faces: wp.array(dtype=wp.int32),
                  vertex_offset: int, face_offset: int, p: Any, max_dist: float):
    """Exact mesh distance: closest triangle through the BVH, sign from the generalised winding number (≥ 0.5 inside).

    The BVH (float32) picks the face; the closest point on it is recomputed in the working precision from
    ``vertices`` (this mesh's vertices start at ``vertex_offset``, its faces at ``face_offset``). Returns
    ``(found, sd, grad, closest)``; ``found`` is False when no face lies within ``max_dist``. The gradient is
    sign·(p − c)/‖p − c‖, or the face normal when ‖p − c‖ < ε_len.
    """
    zero = type(p[0])(0.0)
    one = type(zero)(1.0)
    q = wp.mesh_query_point_sign_winding_number(
        mesh_id, wp.vec3f(wp.float32(p[0]), wp.float32(p[1]), wp.float32(p[2])), max_dist, 2.0, WINDING_INSIDE)
    if not q.result:
        return False, zero, p, p
    f = 3 * (face_offset + q.face)
    a = vertices[vertex_offset + faces[f]]
    b = vertices[vertex_offset + faces[f + 1]]
    c = vertices[vertex_offset + faces[f + 2]]
    closest = closest_point_on_triangle(p, a, b, c)
    sign = one
    if q.sign < 0.0:
        sign = -one
    d = p - closest
    dist = wp.length(d)
    grad = wp.normalize(wp.cross(b - a, c - a))
    if dist >= type(zero)(EPS_LEN):
        grad = d * (sign / dist)
    return True, sign * dist, grad, closest


@wp.func
def grid_sd(nodes: wp.array(dtype=Any), offset: int, dims: wp.vec3i, lo: Any, hi: Any, inv_spacing: Any, p: Any):
    """SDF-grid backend (docs/models/scene.md#signed-distance): trilinear value and gradient inside the node lattice
    [lo, hi].

    ``nodes`` holds (sd, ∂x, ∂y, ∂z) per node; node (i, j, k) of this grid is entry ``offset + (i·ny + j)·nz + k``.
    Outside the lattice, with c = p clamped onto the box: sd = sd(c) + ‖p − c‖ and n = n(c). The gradient is the
    normalised interpolated gradient, or zero when its norm is below ε_grad. The closest point is c − sd(c)·n(c).
    """
    zero = type(p[0])(0.0)
    c = type(p)(wp.clamp(p[0], lo[0], hi[0]), wp.clamp(p[1], lo[1], hi[1]), wp.clamp(p[2], lo[2], hi[2]))
    u = wp.cw_mul(c - lo, inv_spacing)
    i = wp.min(int(wp.floor(u[0])), dims[0] - 2)
    j = wp.min(int(wp.floor(u[1])), dims[1] - 2)
    k = wp.min(int(wp.floor(u[2])), dims[2] - 2)
    tx = u[0] - type(zero)(i)
    ty = u[1] - type(zero)(j)
    tz = u[2] - type(zero)(k)
    sy = dims[2]
    sx = dims[1] * sy
    n000 = offset + i * sx + j * sy + k
    n100 = n000 + sx
    c00 = wp.lerp(wp.lerp(nodes[n000], nodes[n000 + 1], tz), wp.lerp(nodes[n000 + sy], nodes[n000 + sy + 1], tz), ty)
    c10 = wp.lerp(wp.lerp(nodes[n100], nodes[n100 + 1], tz), wp.lerp(nodes[n100 + sy], nodes[n100 + sy + 1], tz), ty)
    v = wp.lerp(c00, c10, tx)
    g = type(p)(v[1], v[2], v[3])
    g_len = wp.length(g)
    n = type(p)(zero, zero, zero)
    if g_len >= type(zero)(EPS_GRAD):
        n = g / g_len
    return v[0] + wp.length(p - c), n, c - n * v[0]
