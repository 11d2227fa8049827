// hopweave: pattern proposals of a goal (hopweave pattern-report --propose): a pattern never
// cited by decided cases (retire) or a new one for cited nodes no pattern retrieved, with why,
// status and reviewer; the definition is the proposed TraversalPattern.
// Set the parameter first:  :param goal => 'LateFeeDispute'
MATCH (p:PatternProposal {goal: $goal})
RETURN p.id AS proposal, p.kind AS kind, p.pattern AS pattern, p.status AS status, p.reason AS reason,
       p.reviewed_by AS reviewed_by, p.reviewed_at AS reviewed_at, p.definition AS definition
ORDER BY kind, pattern, proposal
LIMIT 100
