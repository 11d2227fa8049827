// hopweave: precedent chains for a customer — her profile, the similar profiles, the past
// decisions they resulted in, and the outcome of each (what "comparable precedent" walks).
// Set the parameter first:  :param customer_id => 'CUST_4421'
MATCH chain = (c:Customer {id: $customer_id})-[:HAS_PROFILE]->(:CustomerProfile)-[:SIMILAR_TO]-(:CustomerProfile)-[:RESULTED_IN]->(t:DecisionTrace)
WHERE t.tenant_id = c.tenant_id
RETURN chain, t.outcome AS outcome, t.tier AS tier, t.case_type AS case_type, t.timestamp AS decided
ORDER BY decided DESC, t.id
LIMIT 100
