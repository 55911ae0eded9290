"""Every metric card repeats SPEC's "Deviations from the seeds" list word for word (SPEC asks
the cards to; a card written by hand drifts)."""

import re

import pytest
from conftest import REPO, SHARED, require_shared

from opinion_metrics.families.registry import FAMILIES


def spec_deviations() -> list[str]:
    spec = require_shared(SHARED / "SPEC.md").read_text(encoding="utf-8")
    section = spec.split("## Deviations from the seeds", 1)[1].split("\n## ", 1)[0].split("\n", 1)[1]
    items = re.findall(r"^\d+\. (.*?)(?=^\d+\. |\Z)", section, flags=re.S | re.M)
    return [" ".join(item.split()) for item in items]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_card_repeats_the_spec_deviations(name):
    items = spec_deviations()
    assert len(items) >= 7
    card = (REPO / "metrics" / name / "README.md").read_text(encoding="utf-8")
    section = card.split("## Deviations from the source notebooks", 1)[1].split("\n## ", 1)[0]
    text = " ".join(section.split())
    for number, item in enumerate(items, start=1):
        assert f"{number}. {item}" in text, f"{name}: deviation {number} differs from SPEC"
