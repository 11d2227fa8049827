#!/usr/bin/env node
// hopweave cypher-lint: every statement through Neo4j's own Cypher parser and semantic analysis
// (the npm package @neo4j-cypher/language-support, pinned in package.json / package-lock.json).
//
// Input (stdin): JSON lines, one statement each:
//   {"id": "pattern:late_fee_history", "query": "MATCH ...", "params": ["seed", "tenants"]}
// "params" are the names of the parameters the statement is sent with (hopweave always sends
// values as parameters); a $name that is not among them is reported as an error.
// An optional first line {"schema": {"labels": [...], "relationshipTypes": [...], "propertyKeys": [...]}}
// turns on Neo4j's schema warnings (unknown label / type / property) for the statements after it.
//
// Output (stdout): one JSON line per statement, in input order:
//   {"id": ..., "errors": [diag...], "deprecations": [diag...], "warnings": [diag...]}
// where diag = {"message", "offset", "line", "column", "excerpt"}. "deprecations" are the warnings
// whose message says "deprecated"; "warnings" are the others (schema warnings and the like).
// `node lint.js --about` prints {"package", "version", "cypher"} and exits.
//
// Exit status: 0 when every statement was checked (whatever it found), 2 on bad input.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { lintCypherQuery } = require('@neo4j-cypher/language-support');

// Neo4j 5 (docker-compose.yml pins 5.26) speaks the Cypher 5 language.
const CYPHER_VERSION = 'CYPHER 5';
const ERROR = 1; // vscode DiagnosticSeverity.Error
const PKG = '@neo4j-cypher/language-support';

function about() {
  const pkgJson = path.join(path.dirname(require.resolve(PKG)), '..', '..', 'package.json');
  const version = JSON.parse(fs.readFileSync(pkgJson, 'utf8')).version;
  return { package: PKG, version, cypher: CYPHER_VERSION };
}

function diag(query, d) {
  const start = d.offsets ? d.offsets.start : 0;
  const end = d.offsets ? d.offsets.end : start;
  return {
    message: d.message,
    offset: start,
    line: d.range ? d.range.start.line + 1 : null,
    column: d.range ? d.range.start.character + 1 : null,
    excerpt: query.slice(start, Math.min(end, start + 80)),
  };
}

function lint(stmt, schema) {
  if (typeof stmt.query !== 'string' || stmt.query.length === 0) {
    throw new Error(`statement ${JSON.stringify(stmt.id)} has no "query" string`);
  }
  const parameters = {};
  for (const name of stmt.params || []) parameters[name] = null;
  const dbSchema = { ...schema, parameters, defaultLanguage: CYPHER_VERSION };
  const { diagnostics } = lintCypherQuery(stmt.query, dbSchema, { consoleCommandsEnabled: false });
  const out = { id: stmt.id, errors: [], deprecations: [], warnings: [] };
  for (const d of diagnostics) {
    const kind = d.severity === ERROR ? 'errors' : /deprecated/i.test(d.message) ? 'deprecations' : 'warnings';
    out[kind].push(diag(stmt.query, d));
  }
  return out;
}

async function main() {
  if (process.argv.includes('--about')) {
    process.stdout.write(JSON.stringify(about()) + '\n');
    return 0;
  }
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let schema = {};
  let lineNo = 0;
  for await (const line of rl) {
    lineNo += 1;
    if (!line.trim()) continue;
    let stmt;
    try {
      stmt = JSON.parse(line);
    } catch (e) {
      process.stderr.write(`cypher-lint: stdin line ${lineNo} is not JSON: ${e.message}\n`);
      return 2;
    }
    if (stmt.schema !== undefined) {
      const s = stmt.schema;
      schema = { labels: s.labels, relationshipTypes: s.relationshipTypes, propertyKeys: s.propertyKeys };
      continue;
    }
    try {
      process.stdout.write(JSON.stringify(lint(stmt, schema)) + '\n');
    } catch (e) {
      process.stderr.write(`cypher-lint: stdin line ${lineNo}: ${e.message}\n`);
      return 2;
    }
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`cypher-lint: ${e.stack || e}\n`);
    process.exitCode = 2;
  },
);
