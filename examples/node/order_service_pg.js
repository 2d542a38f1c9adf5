#!/usr/bin/env node
// An order service in Node on PostgreSQL: each status change of an order and the event that
// announces it are written in ONE transaction of the service's own connection. evident_append
// checks the event against the contracts the store holds (evident contracts push) inside that
// transaction: a refused event raises an error, and the order's change rolls back with it.
//
//   node order_service_pg.js --url postgresql://... --order order-1 --status paid \
//       [--schema-version 2]
//
// Prints "appended seq 7", or "refused: <reason>: ..." (exit 1); exit 2 on any other error.
// The functions come from `evident store install-functions` (docs/any-language.md).
'use strict';
const {Client} = require('pg');

// SQLSTATEs of evident_append's refusals: refused by its contract, its id taken by other bytes.
const REFUSED = new Set(['EV001', 'EV002']);

function parse(argv) {
  const args = {schemaVersion: 1};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(.)/g, (_, c) => c.toUpperCase());
    args[key] = argv[i + 1];
  }
  for (const required of ['url', 'order', 'status']) {
    if (!args[required]) throw new Error(`--${required} is required`);
  }
  return args;
}

// The order's new status and its event, committed together or not at all.
async function changeStatus(db, args) {
  await db.query('BEGIN');
  try {
    await db.query('INSERT INTO orders(id, status, version) VALUES($1, $2, 1) ' +
                   'ON CONFLICT(id) DO UPDATE SET status=excluded.status, ' +
                   'version=orders.version+1', [args.order, args.status]);
    const event = JSON.stringify({
      specversion: '1.0', id: `${args.order}-${args.status}`,
      source: 'training://orders/checkout', type: 'order.status.changed', subject: args.order,
      data: {schemaVersion: Number(args.schemaVersion), orderId: args.order, status: args.status},
    });
    const {rows} = await db.query('SELECT evident_append($1) AS seq', [Buffer.from(event)]);
    await db.query('COMMIT');
    return rows[0].seq;
  } catch (error) {
    await db.query('ROLLBACK');
    throw error;
  }
}

async function main() {
  const args = parse(process.argv.slice(2));
  const db = new Client({connectionString: args.url});
  await db.connect();
  try {
    await db.query('CREATE TABLE IF NOT EXISTS orders(' +
                   'id text PRIMARY KEY, status text NOT NULL, version bigint NOT NULL)');
    console.log(`appended seq ${await changeStatus(db, args)}`);
    return 0;
  } catch (error) {
    if (!REFUSED.has(error.code)) throw error;
    console.log(`refused: ${error.message}`);  // the message starts with the reason code
    return 1;
  } finally {
    await db.end();
  }
}

main().then((code) => { process.exitCode = code; }, (error) => {
  console.error(`error: ${error.code || ''}: ${error.message}`);
  process.exitCode = 2;
});
