"""Runs as data: the RunResult record and the results database it is appended to."""
