"""DeltaBank's domain settings (transitional bridge).

The same values as the ``domain:`` section of ``examples/deltabank/hopweave.yaml``. Used only
by the CLI for a store that does not keep its domain settings yet (stores built before the pack
loader); deleted with this package when DeltaBank becomes a pack (issue 10 item 5).
"""

from __future__ import annotations

from hopweave.models.domain import DomainRegistry, DomainSettings

TENANTS = ["deltabank", "northbank"]

DELTABANK = DomainSettings.model_validate({
    "name": "deltabank",
    "subject": {"label": "Customer", "trace_relationship": "FOR_CUSTOMER"},
    "identifiers": [
        {"label": "Customer", "prefix": "CUST"},
        {"label": "Account", "prefix": "ACCT", "owner_path": [{"type": "HOLDS", "direction": "out"}]},
        {"label": "DecisionTrace", "prefix": "TRACE", "owner_path": [{"type": "FOR_CUSTOMER", "direction": "in"}]},
    ],
    "authoritative": [{"entity": "Tier", "subject_property": "tier", "anonymous": "unscoped"}],
    "synonyms": {"label": "Concept", "relationship": "SYNONYM_OF"},
    "amounts_attach_to": ["EventType"],
    "identifier_labels": ["Account", "DecisionTrace", "Customer"],
    "styles": {
        "Customer": "#4C8EDA", "CustomerProfile": "#8DCC93", "Account": "#57C7E3", "Event": "#F16667",
        "Tier": "#D9C8AE", "Product": "#D9C8AE", "Outcome": "#6DCE9E", "Conversation": "#A5ABB6",
        "Workflow": "#FFE081", "Rule": "#FFE081", "Heuristic": "#FFE081", "CaseType": "#F79767",
        "CaseState": "#F79767", "TraceStep": "#E5C7E0",
    },
})


def deltabank_registry() -> DomainRegistry:
    """DeltaBank's settings serving its two tenants."""
    return DomainRegistry([(DELTABANK, list(TENANTS))])
