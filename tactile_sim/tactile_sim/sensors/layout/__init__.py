"""Probe layouts: validated positions, radii and normals, and the layouts generated from links and URDFs."""
