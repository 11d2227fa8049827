// hopweave: one decision trace with what it used and saw — the patterns (with the version it
// ran, and the version stored now), the facts and precedent it saw, the documents whose chunks
// reached the context (chunk ids are in t.chunk_ids), its goal, outcome, steps and the customer.
// Set the parameter first:  :param trace_id => 'TRACE_8514'
MATCH (t:DecisionTrace {id: $trace_id})-[r]->(x)
WHERE type(r) IN ['USED_PATTERN', 'SAW_FACT', 'CITES', 'FOR_CUSTOMER', 'FOR_GOAL', 'HAS_OUTCOME', 'HAS_TRACE_STEP', 'ABOUT']
RETURN t, r, x, type(r) AS relation, r.version AS version_used, x.version AS version_now,
       t.chunk_ids AS chunk_ids, t.as_of AS as_of
ORDER BY relation, x.id
