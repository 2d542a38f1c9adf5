#!/usr/bin/env node
// Seed 002's fulfillment service in Node: it reads the order events from NATS JetStream with the
// `nats` client, and for each one asks evident, INSIDE its own database transaction, what to
// apply (evident_decide), writes its own reservations for each applied event, commits, and only
// then acknowledges the message. evident's ledger, ordering, deferral, quarantine and evidence
// commit with the service's own writes or roll back with them.
//
//   node fulfillment.js (--pg URL | --sqlite PATH --module evident_sqlite.so)
//       [--consumer reservations] (--nats nats://HOST:PORT --stream ORDERS --durable NAME |
//       --events FILE) [--until-idle SECONDS] [--hold-after N]
//
// Prints one line per decided row ("order-417 v3 deferred", "order-417 v3 applied drained");
// exit 0 when every event was decided and committed, 2 on any other error. --hold-after N stops
// after the N-th decision, before its COMMIT, and waits (a test kills the process there). A
// deadlock or serialization failure (PostgreSQL 40P01, 40001) or a busy SQLite file is retried.
'use strict';
const fs = require('fs');

const RETRYABLE = new Set(['40P01', '40001', 'SQLITE_BUSY']);
const RETRIES_MAX = 20;

function parse(argv) {
  const args = {consumer: 'reservations', stream: 'ORDERS', durable: 'fulfillment-node',
                untilIdle: 2, holdAfter: 0};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(.)/g, (_, c) => c.toUpperCase());
    args[key] = argv[i + 1];
  }
  if (!args.pg === !args.sqlite || !args.nats === !args.events) {
    throw new Error('give --pg or --sqlite, and --nats or --events');
  }
  return args;
}

// The service's PostgreSQL database, where evident's store and functions also live.
async function postgresStore(url) {
  const {Client} = require('pg');
  const db = new Client({connectionString: url});
  await db.connect();
  await db.query('CREATE TABLE IF NOT EXISTS reservations(order_id text PRIMARY KEY,' +
                 ' status text NOT NULL, version bigint NOT NULL)');
  await db.query('CREATE TABLE IF NOT EXISTS reservation_log(order_id text NOT NULL,' +
                 ' version bigint NOT NULL, event_id text NOT NULL, PRIMARY KEY(order_id, version))');
  return {
    begin: () => db.query('BEGIN'),
    commit: () => db.query('COMMIT'),
    rollback: () => db.query('ROLLBACK'),
    async decide(consumer, event) {
      const {rows} = await db.query(
          'SELECT position, outcome, reason, key, subject, subject_version, schema_version,' +
          ' event, drained, adapter FROM evident_decide($1, $2)', [consumer, event]);
      return rows.map((r) => ({...r, subject_version: r.subject_version === null ? null :
                                                      Number(r.subject_version)}));
    },
    write: (sql, params) => db.query(sql.replace(/\?/g, (() => {
      let n = 0;
      return () => `$${++n}`;
    })()), params),
    close: () => db.end(),
  };
}

// The service's SQLite file, with evident's extension loaded into its connection.
function sqliteStore(path, module) {
  const Database = require('better-sqlite3');
  const db = new Database(path, {timeout: 10000});
  db.pragma('synchronous = FULL');
  db.loadExtension(module);
  db.exec('CREATE TABLE IF NOT EXISTS reservations(order_id TEXT PRIMARY KEY,' +
          ' status TEXT NOT NULL, version INTEGER NOT NULL)');
  db.exec('CREATE TABLE IF NOT EXISTS reservation_log(order_id TEXT NOT NULL,' +
          ' version INTEGER NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY(order_id, version))');
  const decide = db.prepare('SELECT evident_decide(?, ?) AS answer');
  return {
    begin: async () => db.exec('BEGIN IMMEDIATE'),
    commit: async () => db.exec('COMMIT'),
    rollback: async () => db.inTransaction && db.exec('ROLLBACK'),
    async decide(consumer, event) {
      return JSON.parse(decide.get(consumer, event).answer).map((row) => ({
        ...row, event: row.event !== undefined ? Buffer.from(row.event) :
                                                 Buffer.from(row.event_base64, 'base64'),
      }));
    },
    write: async (sql, params) => db.prepare(sql).run(...params),
    close: async () => db.close(),
  };
}

// The service's own writes for one applied event: its reservation, and a log row whose key
// refuses a second write of the same order version.
async function apply(store, row) {
  const event = JSON.parse(row.event.toString());
  const status = event.type.endsWith('.paid') ? 'reserved' : 'released';
  await store.write('INSERT INTO reservations(order_id, status, version) VALUES(?, ?, ?)' +
                    ' ON CONFLICT(order_id) DO UPDATE SET status=excluded.status,' +
                    ' version=excluded.version', [row.subject, status, row.subject_version]);
  await store.write('INSERT INTO reservation_log(order_id, version, event_id) VALUES(?, ?, ?)',
                    [row.subject, row.subject_version, event.id]);
}

function describe(row) {
  const words = [row.subject || '-', row.subject_version === null ? '-' :
                                                                    `v${row.subject_version}`,
                 row.outcome];
  if (row.reason) words.push(row.reason);
  if (row.drained) words.push('drained');
  return words.join(' ');
}

// One event in one transaction of the service's, retried when the database says so.
async function decideOne(store, consumer, event, hold) {
  for (let attempt = 0; ; ++attempt) {
    let began = false;
    try {
      await store.begin();
      began = true;
      const rows = await store.decide(consumer, event);
      for (const row of rows) {
        // An applied row with a reason is evident's own (the owner's answer to a replay
        // request, recorded on the gap): nothing for the service to apply.
        if (row.outcome === 'applied' && !row.reason) await apply(store, row);
      }
      if (hold) {
        console.log('held');
        await new Promise((resolve) => setTimeout(resolve, 3600 * 1000));  // killed here
      }
      await store.commit();
      return rows;
    } catch (error) {
      if (began) await store.rollback().catch(() => {});  // the original error says more
      if (!RETRYABLE.has(error.code) || attempt + 1 === RETRIES_MAX) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 * (attempt + 1)));
    }
  }
}

// Each event as {data, ack}: from JetStream (a durable pull consumer), or an NDJSON file.
async function* eventsOf(args) {
  if (args.events) {
    for (const line of fs.readFileSync(args.events).toString().split('\n')) {
      if (line.trim()) yield {data: Buffer.from(line), ack: null};
    }
    return;
  }
  const {connect, AckPolicy} = require('nats');
  const nc = await connect({servers: args.nats});
  try {
    const jsm = await nc.jetstreamManager();
    await jsm.consumers.add(args.stream,
                            {durable_name: args.durable, ack_policy: AckPolicy.Explicit});
    const consumer = await nc.jetstream().consumers.get(args.stream, args.durable);
    let idleSince = Date.now();
    while (Date.now() - idleSince < Number(args.untilIdle) * 1000) {
      const batch = await consumer.fetch({max_messages: 10, expires: 1000});
      for await (const m of batch) {
        idleSince = Date.now();
        // Acknowledged after the commit: a crash before it makes the broker deliver again.
        yield {data: Buffer.from(m.data), ack: () => m.ack()};
      }
    }
  } finally {
    await nc.drain();
  }
}

async function main() {
  const args = parse(process.argv.slice(2));
  const store = args.pg ? await postgresStore(args.pg) : sqliteStore(args.sqlite, args.module);
  try {
    let decided = 0;
    for await (const {data, ack} of eventsOf(args)) {
      ++decided;
      const rows = await decideOne(store, args.consumer, data,
                                   decided === Number(args.holdAfter));
      for (const row of rows) console.log(describe(row));
      if (ack) ack();
    }
    return 0;
  } finally {
    await store.close();
  }
}

main().then((code) => process.exit(code), (error) => {
  console.error(`error: ${error.message}`);
  process.exit(2);
});
