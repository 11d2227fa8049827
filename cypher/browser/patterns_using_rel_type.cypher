// hopweave: co-evolution — every traversal pattern that walks a given relationship type, with
// its goal (run this before renaming or deprecating an edge type).
// Set the parameter first:  :param rel_type => 'HAS_EVENT'
MATCH (g:GoalType)-[h:HAS_PATTERN]->(p:TraversalPattern)
WHERE $rel_type IN p.edge_types
RETURN g, h, p, p.edge_types AS edge_types, p.version AS version
ORDER BY g.name, p.name
