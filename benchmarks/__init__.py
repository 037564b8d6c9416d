"""Benchmarks behind ``skillsight bench``; each measures one target of DESIGN.md in one run."""
