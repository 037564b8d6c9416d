"""``python -m skillsight.cli``."""

from skillsight.cli import main

main()
