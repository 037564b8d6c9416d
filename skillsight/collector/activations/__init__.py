"""Skill activations: the record and its extraction from a session trajectory."""

from skillsight.collector.activations._catalogue import Catalogue
from skillsight.collector.activations.extract import extract_activations
from skillsight.collector.activations.model import (
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
    "Catalogue",
    "SkillContract",
    "Tokens",
    "ToolCall",
    "Trigger",
    "VisibleSkill",
    "activation_id",
    "extract_activations",
]
