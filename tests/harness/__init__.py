"""Test-only helpers (capture receivers) shared by the test suite."""
