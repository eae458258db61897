"""Regression watching: tracked metrics, the policy, the verdict rule and the trend report (Prefect-free)."""
