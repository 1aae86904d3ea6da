"""Geometry layer: shapes, signed-distance queries, surface sampling and rigid transforms (torch, warp)."""
