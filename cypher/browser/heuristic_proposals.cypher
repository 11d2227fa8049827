// hopweave: mined heuristics of a goal (hopweave consolidate) with their status, support,
// confidence, who reviewed them, and the decided traces they were mined from (MINED_FROM).
// Set the parameter first:  :param goal => 'LateFeeDispute'
MATCH (h:Heuristic {goal: $goal})
OPTIONAL MATCH (h)-[:MINED_FROM]->(t:DecisionTrace)
WHERE t.tenant_id = h.tenant_id
RETURN h.id AS heuristic, h.status AS status, h.text AS text, h.support AS support,
       h.confidence AS confidence, h.reviewed_by AS reviewed_by, h.reviewed_at AS reviewed_at,
       count(t) AS evidence, collect(t.id)[0..5] AS sample_traces
ORDER BY status, support DESC, heuristic
LIMIT 100
