"""skillsight's own instrumentors: GenAI names plus ``skillsight.*`` for what GenAI lacks."""

from __future__ import annotations

from skillsight import semconv as sc
from skillsight.store.normalize._convention import Convention
from skillsight.store.normalize._sql import attr, first, lit

# A span of skillsight's own instrumentors carries a skillsight.* attribute. The rerun tags
# (skillsight.rerun.*) do not count: `skillsight rerun` puts them in its agents' resource
# attributes, which Claude Code copies onto every span and log record it exports.
_DETECT = (
    f"arrayExists(k -> startsWith(k, 'skillsight.') "
    f"AND NOT startsWith(k, {lit(sc.SKILLSIGHT_RERUN_PREFIX)}), attr_keys)"
)

SKILLSIGHT = Convention(
    name="skillsight",
    detect=_DETECT,
    span_fields={
        "operation": (
            f"if({attr(sc.SKILLSIGHT_SPAN_KIND)} = '{sc.SPAN_KIND_SKILL_ACTIVATION}', "
            f"'{sc.OP_ACTIVATE_SKILL}', '')"
        ),
        "input": first(attr(sc.SKILLSIGHT_ACTIVATION_INPUT)),
        "cost_usd": attr(sc.SKILLSIGHT_COST_USD),
    },
)
