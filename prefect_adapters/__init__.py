"""Prefect adapters: what binds specops to Prefect besides flows and tasks (hooks, limits, artifacts, logs)."""
