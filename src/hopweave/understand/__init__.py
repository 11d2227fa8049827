"""Stage 1, understanding the request: goal classification from the graph's GoalType nodes,
entity resolution from the graph vocabulary and the authenticated session, entities -> the typed
chunk filter (the FilterMapping node), and the lexical query plan.

The engine calls :class:`Understander`::

    u = Understander(store, settings=domain_settings).understand(utterance, session, as_of)
    u.goal, u.confidence, u.entities, u.filter, u.lexical.query
"""

from hopweave.understand.models import (
    Classification,
    Entity,
    GoalCandidate,
    LexicalPlan,
    LexicalTerm,
    Mention,
    Understanding,
)
from hopweave.understand.understander import Understander, UnderstandingStage

__all__ = [
    "Classification",
    "Entity",
    "GoalCandidate",
    "LexicalPlan",
    "LexicalTerm",
    "Mention",
    "Understander",
    "UnderstandingStage",
    "Understanding",
]
