"""Points fixed on links or tracked bodies: probe sets, surface samples, tracked clouds, the fused cell kernel."""
