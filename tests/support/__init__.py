"""Test-only infrastructure that real backends need (servers, endpoints), shared by fixtures."""
