// bench/ajv_cli_peer.js — what `evident schema validate --format-assertion` does, done with
// ajv 8 (+ajv-formats) on Node.js: read an NDJSON file of instances, validate each with the
// compiled schema (draft 7, formats asserted) and write one JSON line per instance with its
// index, verdict and errors. bench/schema_cli_bench.sh times it against the evident CLI.
// Usage: node ajv_cli_peer.js SCHEMA.json INSTANCES.ndjson > verdicts.ndjson
const fs = require('fs');
const Ajv = require('ajv');
const addFormats = require('ajv-formats');

const [schemaPath, dataPath] = process.argv.slice(2);
// allErrors: every error of an instance, as evident reports them (up to its errors_max, 16).
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
const lines = fs.readFileSync(dataPath, 'utf8').split('\n');
const out = fs.openSync('/dev/stdout', 'w');
let chunk = [];
const flush = () => {
  if (chunk.length > 0) fs.writeSync(out, chunk.join(''));
  chunk = [];
};
let index = 0;
for (const line of lines) {
  if (line.length === 0) continue;
  let verdict;
  try {
    const valid = validate(JSON.parse(line));
    const errors = valid ? [] : validate.errors.map((e) => ({
      instanceLocation: e.instancePath, keywordLocation: e.schemaPath, error: e.message }));
    verdict = { index, valid, errors };
  } catch (e) {
    verdict = { index, valid: false, errors: [{ instanceLocation: '', keywordLocation: '',
                                                 error: 'not JSON: ' + e.message }] };
  }
  chunk.push(JSON.stringify(verdict) + '\n');
  if (chunk.length >= 4096) flush();
  ++index;
}
flush();
fs.closeSync(out);
