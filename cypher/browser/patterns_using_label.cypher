// hopweave: co-evolution — every traversal pattern that touches a given node label (seed, via
// or target), with its goal (run this before changing a label or its properties).
// Set the parameter first:  :param label => 'Event'
MATCH (g:GoalType)-[h:HAS_PATTERN]->(p:TraversalPattern)
WHERE $label IN p.labels_used
RETURN g, h, p, p.labels_used AS labels_used, p.version AS version
ORDER BY g.name, p.name
