"""TemperatureGrid and the thermal system it reads (voxel grids, lumped bodies, pair relaxation)."""
