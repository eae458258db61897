"""Sweeps: draft length x concurrency grids, the crossover where speculation stops paying, the best draft
length per concurrency rendered for the backend, and comparisons of several profiles on one target.
Prefect-free: the sweep and compare flows call these."""
