// hopweave: a customer's recorded retrievals and the precedent each of them saw (decision chains:
// which earlier decisions informed which later ones).
// Set the parameter first:  :param customer_id => 'CUST_4421'
MATCH (t:DecisionTrace)-[f:FOR_CUSTOMER]->(c:Customer {id: $customer_id})
OPTIONAL MATCH (t)-[s:SAW_FACT]->(p:DecisionTrace)
RETURN c, f, t, s, p, t.goal AS goal, t.as_of AS as_of
ORDER BY t.as_of DESC, t.id, p.id
LIMIT 200
