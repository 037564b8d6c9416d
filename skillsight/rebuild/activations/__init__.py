"""Skill activations: their extraction from a session trajectory (the record itself is
:class:`skillsight.store.records.Activation`)."""

from skillsight.rebuild.activations.extract import extract_activations

__all__ = ["extract_activations"]
