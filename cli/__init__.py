"""The `specops` command line. It sits above flows/ (it runs them), so it lives outside the core package."""
