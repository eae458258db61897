"""The pipeline's steps, Prefect-free: plan, render and serve, check (lossless too), benchmark, the run's result.
Each step takes the backend built once for the run and only the settings it uses."""
