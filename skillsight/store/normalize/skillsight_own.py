"""skillsight's own instrumentors: GenAI names plus ``skillsight.*`` for what GenAI lacks."""

from __future__ import annotations

from skillsight import semconv as sc
from skillsight.store.normalize._convention import Convention
from skillsight.store.normalize._sql import attr, first, has_attr_prefix

SKILLSIGHT = Convention(
    name="skillsight",
    detect=has_attr_prefix("skillsight."),
    span_fields={
        "operation": (
            f"if({attr(sc.SKILLSIGHT_SPAN_KIND)} = '{sc.SPAN_KIND_SKILL_ACTIVATION}', "
            f"'{sc.OP_ACTIVATE_SKILL}', '')"
        ),
        "input": first(attr(sc.SKILLSIGHT_ACTIVATION_INPUT)),
        "cost_usd": attr(sc.SKILLSIGHT_COST_USD),
    },
)
