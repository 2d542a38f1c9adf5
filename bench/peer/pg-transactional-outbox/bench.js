#!/usr/bin/env node
// bench/peer/pg-transactional-outbox/bench.js — inbox throughput of pg-transactional-outbox 0.5.7
// (the closest peer of evident) on PostgreSQL, with the library's polling listener.
//
//   node bench.js --url postgresql://USER@127.0.0.1:PORT/DB --schema peer_bench \
//                 --input events.ndjson --events 100000
//                 [--batch-size 150] [--poll-interval-ms 50] [--store-concurrency 8]
//                 [--handler-pool-max BATCH] [--batch-size-strategy default|fixed]
//                 [--timeout-seconds 3600]
//
// Phases: (1) the library's setup SQL (DatabaseSetupExporter.createPollingScript) creates the
// inbox table, its next_inbox_messages() polling function and its indexes in a fresh schema;
// (2) every input CloudEvent is stored into the inbox through the library's inbox storage
// (initializeMessageStorage), one transaction per message as a message receiver does (timed);
// (3) the library's polling listener (initializePollingMessageListener) runs a handler that, in
// the library's per-message transaction, upserts one peer_projection row per subject; timed from
// listener start until a 50 ms poll of the inbox sees every stored row processed_at IS NOT NULL.
// Prints one JSON line. Any logged library warning/error, abandoned message or mismatch exits 1.
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { Client, Pool } = require('pg');
const { v5: uuidv5 } = require('uuid');
const {
  DatabaseSetupExporter,
  executeTransaction,
  IsolationLevel,
  initializeMessageStorage,
  initializePollingMessageListener,
} = require('pg-transactional-outbox');

const PEER = 'pg-transactional-outbox';
const LIB_VERSION = require('pg-transactional-outbox/package.json').version;
const EXPECTED_VERSION = '0.5.7';
// Namespace for mapping a CloudEvent (source, id) to the inbox's uuid primary key.
const CE_NAMESPACE = uuidv5('evident-bench://cloudevents', uuidv5.URL);

function die(message) {
  process.stderr.write(`bench.js: ${message}\n`);
  process.exit(1);
}
process.on('unhandledRejection', (e) => die(`unhandled rejection: ${e && e.stack ? e.stack : e}`));
process.on('uncaughtException', (e) => die(`uncaught exception: ${e && e.stack ? e.stack : e}`));

function parseArgs(argv) {
  const opts = {
    url: null,
    schema: null,
    input: null,
    events: null,
    batchSize: 150,
    pollIntervalMs: 50,
    storeConcurrency: 8,
    handlerPoolMax: null,
    batchSizeStrategy: 'default',
    timeoutSeconds: 3600,
  };
  const names = {
    '--url': ['url', String],
    '--schema': ['schema', String],
    '--input': ['input', String],
    '--events': ['events', Number],
    '--batch-size': ['batchSize', Number],
    '--poll-interval-ms': ['pollIntervalMs', Number],
    '--store-concurrency': ['storeConcurrency', Number],
    '--handler-pool-max': ['handlerPoolMax', Number],
    '--batch-size-strategy': ['batchSizeStrategy', String],
    '--timeout-seconds': ['timeoutSeconds', Number],
  };
  for (let i = 0; i < argv.length; i += 2) {
    const spec = names[argv[i]];
    if (!spec || i + 1 >= argv.length) die(`bad argument ${argv[i]} (see the header of bench.js)`);
    const value = spec[1](argv[i + 1]);
    if (spec[1] === Number && !(Number.isInteger(value) && value > 0)) die(`${argv[i]} wants a positive integer`);
    opts[spec[0]] = value;
  }
  if (!['default', 'fixed'].includes(opts.batchSizeStrategy)) die('--batch-size-strategy is default or fixed');
  for (const k of ['url', 'schema', 'input', 'events']) if (opts[k] === null) die(`--${k} is required`);
  // The library splices schema/table/function names into SQL unquoted: keep to plain identifiers.
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) die('--schema must match [a-z_][a-z0-9_]*');
  return opts;
}

// A logger with pino's BaseLogger shape (what the library takes) that never swallows problems:
// every warn/error/fatal the library logs is kept and fails the run, except two warnings that are
// the library working as designed, which are counted and reported instead: the storage's
// deduplication notice ("already existed"), and a handler transaction's
// `SELECT ... FOR NO KEY UPDATE NOWAIT` on its inbox row failing with lock_not_available (55P03)
// because a concurrent next_inbox_messages() poll holds that row lock. The library logs such a
// failure twice (processing error, then "Retrying it again") and retries the message once its
// locked_until has passed; a message that exhausts maxAttempts is abandoned (an error: fails).
function makeLogger() {
  const problems = [];
  let duplicates = 0;
  let lockRetries = 0;
  const isLockNotAvailable = (e) =>
    e instanceof Error && (e.code === '55P03' || (e.innerError && e.innerError.code === '55P03'));
  const keep = (level) => (obj, msg) => {
    const text = typeof obj === 'string' ? obj : msg;
    if (level === 'warn' && typeof text === 'string' && text.includes('already existed')) {
      ++duplicates;
      return;
    }
    if (level === 'warn' && isLockNotAvailable(obj)) {
      if (typeof text === 'string' && text.includes('Retrying it again')) ++lockRetries;
      return;
    }
    const detail = obj instanceof Error ? `${obj.stack}${obj.innerError ? `\ninner: ${obj.innerError.stack || obj.innerError}` : ''}` : '';
    problems.push(`${level}: ${text}${detail ? `\n${detail}` : ''}`);
  };
  const nothing = () => {};
  const logger = {
    level: 'info',
    fatal: keep('fatal'),
    error: keep('error'),
    warn: keep('warn'),
    info: nothing,
    debug: nothing,
    trace: nothing,
    silent: nothing,
  };
  return { logger, problems, duplicates: () => duplicates, lockRetries: () => lockRetries };
}

function readEvents(file, n) {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  if (lines.length < n) die(`${file} has ${lines.length} events, fewer than --events ${n}`);
  const events = [];
  for (let i = 0; i < n; ++i) {
    let ce;
    try {
      ce = JSON.parse(lines[i]);
    } catch (e) {
      die(`${file}:${i + 1}: ${e.message}`);
    }
    for (const f of ['id', 'source', 'type', 'subject']) {
      if (typeof ce[f] !== 'string' || ce[f] === '') die(`${file}:${i + 1}: missing ${f}`);
    }
    if (typeof ce.data !== 'object' || ce.data === null) die(`${file}:${i + 1}: missing data`);
    events.push(ce);
  }
  return events;
}

// CloudEvent -> the library's TransactionalMessage. The inbox key is a uuid column, so the
// CloudEvents identity (source, id) becomes a name-based (v5) uuid; segment = subject makes the
// polling function hand out at most one message per subject at a time (per-subject order, as
// evident keeps it); concurrency stays at the library default 'sequential'.
function toMessage(ce) {
  return {
    id: uuidv5(`${ce.source}\n${ce.id}`, CE_NAMESPACE),
    aggregateType: ce.source,
    aggregateId: ce.subject,
    messageType: ce.type,
    segment: ce.subject,
    payload: ce,
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (LIB_VERSION !== EXPECTED_VERSION) die(`installed ${PEER} is ${LIB_VERSION}, want ${EXPECTED_VERSION}`);
  const events = readEvents(opts.input, opts.events);
  const messages = events.map(toMessage);
  const subjects = new Set(events.map((e) => e.subject)).size;

  const { logger, problems, duplicates, lockRetries } = makeLogger();
  const check = () => {
    if (problems.length > 0) die(`the library reported ${problems.length} problem(s):\n${problems.slice(0, 5).join('\n')}`);
  };

  const schema = opts.schema;
  const table = 'inbox';
  const nextMessagesName = 'next_inbox_messages';

  // ---- setup: fresh schema, then the library's own polling setup script (roles skipped).
  const admin = new Client({ connectionString: opts.url });
  await admin.connect();
  const user = (await admin.query('SELECT current_user AS u, current_database() AS d')).rows[0];
  await admin.query(`SET client_min_messages = warning; DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  const setupSql = DatabaseSetupExporter.createPollingScript(
    {
      outboxOrInbox: 'inbox',
      database: user.d,
      schema,
      table,
      listenerRole: user.u, // single role: the test server's trust user (grants are then no-ops)
      nextMessagesSchema: schema,
      nextMessagesName,
    },
    true, // skipRoles: the role already exists
  );
  // The script's DROP INDEX IF EXISTS lines are not schema-qualified: scope them to our schema.
  await admin.query(`SET search_path TO ${schema}; ${setupSql}; RESET search_path`);
  await admin.query(`CREATE TABLE ${schema}.peer_projection (
      subject text PRIMARY KEY, version bigint NOT NULL, state text NOT NULL,
      fields_json text NOT NULL, updated_at_ms bigint NOT NULL)`);

  const baseSettings = {
    dbSchema: schema,
    dbTable: table,
    // The library's inbox defaults (and README advice for the inbox): both protections on.
    enableMaxAttemptsProtection: true,
    enablePoisonousMessageProtection: true,
  };
  const pollingSettings = {
    ...baseSettings,
    nextMessagesFunctionSchema: schema, // defaults to 'public' otherwise, not to dbSchema
    nextMessagesFunctionName: nextMessagesName,
    nextMessagesBatchSize: opts.batchSize,
    nextMessagesPollingIntervalInMs: opts.pollIntervalMs,
  };
  // The handler pool (a pg Pool option passed through dbHandlerConfig): each in-flight message
  // holds one connection for its transaction; by default one per message of a full batch.
  const handlerPoolMax = opts.handlerPoolMax ?? opts.batchSize;
  const config = {
    outboxOrInbox: 'inbox',
    dbListenerConfig: { connectionString: opts.url },
    dbHandlerConfig: { connectionString: opts.url, max: handlerPoolMax },
    settings: pollingSettings,
  };

  // ---- store phase: the receiver side, as in the README (one transaction per message).
  const storeInboxMessage = initializeMessageStorage(config, logger);
  const storePool = new Pool({ connectionString: opts.url, max: opts.storeConcurrency });
  storePool.on('error', (e) => die(`store pool: ${e.stack}`));
  // Workers own disjoint sets of subjects so each subject's events enter the inbox in input order
  // (the polling function orders a segment's messages by created_at).
  const lanes = Array.from({ length: opts.storeConcurrency }, () => []);
  for (const m of messages) {
    const h = crypto.createHash('md5').update(m.segment).digest().readUInt32LE(0);
    lanes[h % lanes.length].push(m);
  }
  const storeStart = process.hrtime.bigint();
  await Promise.all(
    lanes.map(async (lane) => {
      for (const m of lane) {
        await executeTransaction(
          await storePool.connect(),
          async (client) => storeInboxMessage(m, client),
          IsolationLevel.ReadCommitted,
        );
      }
    }),
  );
  const storeSeconds = Number(process.hrtime.bigint() - storeStart) / 1e9;
  await storePool.end();
  check();
  const stored = Number((await admin.query(`SELECT count(*) AS n FROM ${schema}.${table}`)).rows[0].n);
  if (stored + duplicates() !== opts.events) die(`stored ${stored} + ${duplicates()} duplicates != ${opts.events}`);

  // ---- process phase: the library's polling listener with the projection handler.
  const upsert = `INSERT INTO ${schema}.peer_projection AS p (subject, version, state, fields_json, updated_at_ms)
      VALUES ($1, 1, $2, $3, $4)
      ON CONFLICT (subject) DO UPDATE SET version = p.version + 1, state = EXCLUDED.state,
        fields_json = EXCLUDED.fields_json, updated_at_ms = EXCLUDED.updated_at_ms`;
  const handler = {
    handle: async (message, client) => {
      const ce = message.payload;
      const data = ce.data;
      if (!Number.isInteger(data.schemaVersion)) throw new Error(`event ${ce.id}: data.schemaVersion missing`);
      const state = typeof data.status === 'string' ? data.status : ce.type;
      await client.query(upsert, [ce.subject, state, JSON.stringify(data), Date.now()]);
    },
  };
  const progressSql = `SELECT count(*) FILTER (WHERE processed_at IS NOT NULL) AS processed,
      count(*) FILTER (WHERE abandoned_at IS NOT NULL) AS abandoned FROM ${schema}.${table}`;

  const processStart = process.hrtime.bigint();
  // 'default': the library's defaultPollingListenerBatchSizeStrategy, which asks for one message
  // per poll for the first nextMessagesBatchSize polls (poisonous-message protection at start-up)
  // and nextMessagesBatchSize after. 'fixed': the documented batchSizeStrategy hook returning
  // nextMessagesBatchSize from the first poll (steady state without the start-up ramp).
  const strategies = opts.batchSizeStrategy === 'fixed'
    ? { batchSizeStrategy: () => Promise.resolve(opts.batchSize) }
    : undefined;
  const [shutdown] = initializePollingMessageListener(config, handler, logger, strategies);
  const deadline = Date.now() + opts.timeoutSeconds * 1000;
  let processSeconds;
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const row = (await admin.query(progressSql)).rows[0];
    const now = process.hrtime.bigint();
    check();
    if (Number(row.abandoned) > 0) die(`${row.abandoned} inbox message(s) abandoned`);
    if (Number(row.processed) >= stored) {
      processSeconds = Number(now - processStart) / 1e9;
      break;
    }
    if (Date.now() > deadline) die(`timeout: ${row.processed}/${stored} processed`);
  }
  await shutdown();
  check();

  // ---- verification: exactly once per event into the projection.
  const proj = (await admin.query(`SELECT count(*) AS rows, coalesce(sum(version), 0) AS versions
      FROM ${schema}.peer_projection`)).rows[0];
  if (Number(proj.rows) !== subjects) die(`projection has ${proj.rows} rows, want ${subjects}`);
  if (Number(proj.versions) !== stored) die(`projection versions sum to ${proj.versions}, want ${stored}`);
  const attempts = (await admin.query(`SELECT max(started_attempts) AS s, max(finished_attempts) AS f
      FROM ${schema}.${table}`)).rows[0];
  await admin.end();

  const r = (x) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    peer: PEER,
    version: LIB_VERSION,
    mode: 'polling',
    events: opts.events,
    subjects,
    store_seconds: r(storeSeconds),
    process_seconds: r(processSeconds),
    store_events_per_second: Math.round(opts.events / storeSeconds),
    process_events_per_second: Math.round(stored / processSeconds),
    total_events_per_second: Math.round(opts.events / (storeSeconds + processSeconds)),
    duplicates: duplicates(),
    lock_retries: lockRetries(),
    max_started_attempts: Number(attempts.s),
    settings: {
      listener: 'initializePollingMessageListener',
      nextMessagesBatchSize: opts.batchSize,
      nextMessagesPollingIntervalInMs: opts.pollIntervalMs,
      nextMessagesLockInMs: 5000,
      handlerPoolMax,
      batchSizeStrategy: opts.batchSizeStrategy === 'fixed'
        ? 'fixed (nextMessagesBatchSize from the first poll)'
        : 'default (1 message per poll for the first nextMessagesBatchSize polls)',
      enableMaxAttemptsProtection: true,
      enablePoisonousMessageProtection: true,
      isolation: 'database default (BEGIN, READ COMMITTED)',
      segment: 'subject',
      concurrency: 'sequential',
      storeConcurrency: opts.storeConcurrency,
      storeTransaction: 'one per message (README receiver example)',
      node: process.version,
      pg: require('pg/package.json').version,
    },
  }));
  process.exit(0);
}

main().catch((e) => die(e && e.stack ? e.stack : String(e)));
