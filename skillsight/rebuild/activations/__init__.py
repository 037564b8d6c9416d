"""Skill activations: the record and its extraction from a session trajectory."""

from skillsight.rebuild.activations.extract import extract_activations
from skillsight.store.records import (
    Activation,
    SkillContract,
    Tokens,
    ToolCall,
    Trigger,
    VisibleSkill,
    activation_id,
)

__all__ = [
    "Activation",
    "SkillContract",
    "Tokens",
    "ToolCall",
    "Trigger",
    "VisibleSkill",
    "activation_id",
    "extract_activations",
]
