// hopweave: the whole metagraph — every goal type and its patterns.
MATCH (g:GoalType)
OPTIONAL MATCH (g)-[h:HAS_PATTERN]->(p:TraversalPattern)
RETURN g, h, p
ORDER BY g.name, p.name
