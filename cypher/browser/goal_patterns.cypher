// hopweave: a goal type with its traversal patterns (the metagraph of one goal); status is
// active (its goal runs it) or retired (kept for the audit and its traces, no longer run).
// Set the parameter first:  :param goal => 'LateFeeDispute'
MATCH (g:GoalType {name: $goal})-[h:HAS_PATTERN]->(p:TraversalPattern)
RETURN g, h, p, p.sub_question AS sub_question, p.edge_types AS edge_types, p.version AS version,
       coalesce(p.status, 'active') AS status
ORDER BY p.name
