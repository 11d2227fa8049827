// hopweave: every decision trace that used a given traversal pattern, newest first, with the
// pattern version each one ran (audit: "which answers did pattern X shape?").
// Set the parameter first:  :param pattern => 'comparable_precedent'
MATCH (t:DecisionTrace)-[u:USED_PATTERN]->(p:TraversalPattern {name: $pattern})
RETURN t, u, p, u.version AS version_used, p.version AS version_now, t.tenant_id AS tenant,
       t.customer_id AS customer, t.as_of AS as_of
ORDER BY t.as_of DESC, t.id
LIMIT 200
