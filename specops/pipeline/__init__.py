"""The pipeline's steps, Prefect-free: plan, render, serve, check, benchmark, lossless, and the run's result.

Each step takes the backend built once for the run and only the settings it uses.
"""
