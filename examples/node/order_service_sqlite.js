#!/usr/bin/env node
// An order service in Node on SQLite: each status change of an order and the event that
// announces it are written in ONE transaction of the service's own connection. evident_append
// checks the event against the contracts the store holds (evident contracts push) inside that
// transaction: a refused event throws, and the order's change rolls back with it.
//
//   node order_service_sqlite.js --store shop.db --module evident_sqlite.so \
//       --order order-1 --status paid [--schema-version 2]
//
// Prints "appended seq 7", or "refused: <reason>: ..." (exit 1); exit 2 on any other error.
// better-sqlite3 bundles its own SQLite: evident_sqlite.so links none and uses that one.
'use strict';
const Database = require('better-sqlite3');

function parse(argv) {
  const args = {schemaVersion: 1};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(.)/g, (_, c) => c.toUpperCase());
    args[key] = argv[i + 1];
  }
  for (const required of ['store', 'module', 'order', 'status']) {
    if (!args[required]) throw new Error(`--${required} is required`);
  }
  return args;
}

function connect(path, module) {
  const db = new Database(path, {timeout: 10000});
  db.pragma('synchronous = FULL');  // evident refuses less
  db.loadExtension(module);
  db.exec('CREATE TABLE IF NOT EXISTS orders(' +
          'id TEXT PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL)');
  return db;
}

function main() {
  const args = parse(process.argv.slice(2));
  const db = connect(args.store, args.module);
  const upsert = db.prepare('INSERT INTO orders(id, status, version) VALUES(?, ?, 1) ' +
                            'ON CONFLICT(id) DO UPDATE SET status=excluded.status, version=version+1');
  const append = db.prepare('SELECT evident_append(?) AS seq');
  // A better-sqlite3 transaction: committed when the function returns, rolled back when it throws.
  const changeStatus = db.transaction((order, status) => {
    upsert.run(order, status);
    const event = JSON.stringify({
      specversion: '1.0', id: `${order}-${status}`, source: 'training://orders/checkout',
      type: 'order.status.changed', subject: order,
      data: {schemaVersion: Number(args.schemaVersion), orderId: order, status},
    });
    return append.get(event).seq;
  });
  try {
    // .immediate: BEGIN IMMEDIATE, so the write lock is waited for up front.
    console.log(`appended seq ${changeStatus.immediate(args.order, args.status)}`);
    return 0;
  } catch (error) {
    if (error.code !== 'SQLITE_CONSTRAINT') throw error;
    console.log(`refused: ${error.message}`);  // the message starts with the reason code
    return 1;
  }
}

try {
  process.exitCode = main();
} catch (error) {
  console.error(`error: ${error.message}`);
  process.exitCode = 2;
}
