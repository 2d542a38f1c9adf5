// bench/ajv_peer.js — ajv 8 (+ajv-formats) on the same data as schema_bench (one core).
// Usage: node ajv_peer.js DATA_DIR WORKLOAD... ; prints one JSON line per workload.
// JSON.parse is inside the timed loop, as parsing is inside evident's timed loop.
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');
const addFormats = require('ajv-formats');

const [dir, ...workloads] = process.argv.slice(2);
for (const name of workloads) {
  const schema = JSON.parse(fs.readFileSync(path.join(dir, name + '.schema.json'), 'utf8'));
  const lines = fs.readFileSync(path.join(dir, name + '.ndjson'), 'utf8').split('\n').filter(Boolean);
  const ajv = new Ajv({ strict: false });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  // Per-instance verdicts, one line each ('1' valid, '0' invalid), for the agreement check.
  fs.writeFileSync(path.join(dir, name + '.ajv.verdicts'),
                   lines.map((line) => (validate(JSON.parse(line)) ? '1' : '0')).join('\n') + '\n');
  let valid = 0;
  for (let round = 0; round < 5; ++round) for (const line of lines) validate(JSON.parse(line));
  let count = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0n;
  do {
    for (const line of lines) {
      if (validate(JSON.parse(line))) ++valid;
    }
    count += lines.length;
    elapsed = process.hrtime.bigint() - start;
  } while (elapsed < 3000000000n);
  const seconds = Number(elapsed) / 1e9;
  console.log(JSON.stringify({ validator: 'ajv', workload: name, instances_per_second: count / seconds,
                               valid_fraction: valid / count }));
}
