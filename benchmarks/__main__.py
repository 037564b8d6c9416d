"""``python -m benchmarks NAME``: the benchmarks (``make bench`` runs them all)."""

from benchmarks.cli import app

app(prog_name="python -m benchmarks")
