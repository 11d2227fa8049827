"""Goal templates (section titles and lines, aggregate lines, search templates) name plain fields
only: refused when the goal is read, and rendered without attribute access if one slips by."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hopweave.engine.context_lines import render
from hopweave.models.metagraph import Aggregate, SectionTemplate, template_problem

HOSTILE = "{summary.__class__.__mro__[1].__subclasses__}"


@pytest.mark.parametrize("template", ["{summary}", "{amount:,.2f} on {date}", "Applicable policy — {document}",
                                      "{n} waiver{n_s}", "{x:>{width}}", "no fields", "{name!s}"])
def test_plain_fields_pass(template: str) -> None:
    assert template_problem(template) is None


@pytest.mark.parametrize(("template", "why"), [
    (HOSTILE, "attribute access"), ("{rows[0]}", "indexing"), ("{}", "field name"), ("{0}", "field name"),
    ("{name!r}", "only the !s conversion"), ("{x:>{w.real}}", "attribute access"), ("{unclosed", "not a valid"),
])
def test_attribute_access_indexing_and_repr_are_refused(template: str, why: str) -> None:
    problem = template_problem(template)
    assert problem is not None and why in problem
    with pytest.raises(ValidationError, match="section 'customer' line"):
        SectionTemplate(name="customer", title="Customer", source="facts", line=template)
    with pytest.raises(ValidationError, match="aggregate line"):
        Aggregate(line=template)


def test_render_never_reaches_into_an_object() -> None:
    values = {"summary": "Maria's account", "rows": ["a"]}
    assert render(HOSTILE, values, "{summary}") == "Maria's account"
    assert render("{rows[0]} {summary!r}", values) == ""
    assert render("{summary:>20}", values) == "Maria's account"
