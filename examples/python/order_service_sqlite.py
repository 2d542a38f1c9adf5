#!/usr/bin/python3
"""An order service in Python on SQLite: each status change of an order and the event that
announces it are written in ONE transaction of the service's own connection. The event is
checked against the contracts the store holds (evident contracts push) by evident_append,
inside that transaction: a refused event raises, and the order's change rolls back with it.

    order_service_sqlite.py --store shop.db --module evident_sqlite.so \
        --order order-1 --status paid [--schema-version 2] [--count N] [--hold]

Prints one line per event ("appended seq 7", or "refused: schema-violation: ..."); exit 0 when
every event was appended (or a duplicate), 1 when one was refused, 2 on any other error.
--hold stops after the append, before COMMIT, and waits (a test kills the process there).

Debian's /usr/bin/python3 is built with extension loading; another python3 first on PATH may
not be (sqlite3.Connection has no enable_load_extension then).
"""
import argparse
import json
import sqlite3
import sys
import time


def connect(path, module):
    # isolation_level=None: no implicit transactions; this code says BEGIN IMMEDIATE itself
    # (Python's implicit BEGIN comes only at the first write, after evident's reads).
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    db.execute("PRAGMA synchronous=FULL")
    db.enable_load_extension(True)
    db.load_extension(module)
    db.enable_load_extension(False)
    db.execute("CREATE TABLE IF NOT EXISTS orders("
               "id TEXT PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL)")
    return db


def status_event(order, status, version, schema_version, event_id):
    return json.dumps({
        "specversion": "1.0", "id": event_id, "source": "training://orders/checkout",
        "type": "order.status.changed", "subject": order,
        "data": {"schemaVersion": schema_version, "orderId": order, "status": status},
    }, separators=(",", ":"))


def change_status(db, order, status, schema_version, event_id, hold=False):
    """The order's new status and its event, committed together or not at all."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("INSERT INTO orders(id, status, version) VALUES(?, ?, 1) "
                   "ON CONFLICT(id) DO UPDATE SET status=excluded.status, version=version+1",
                   (order, status))
        (version,) = db.execute("SELECT version FROM orders WHERE id=?", (order,)).fetchone()
        event = status_event(order, status, version, schema_version, event_id)
        (seq,) = db.execute("SELECT evident_append(?)", (event,)).fetchone()
        if hold:
            print("held", flush=True)
            time.sleep(3600)
        db.execute("COMMIT")
        return seq
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already (a full disk, an I/O error)
            db.execute("ROLLBACK")
        raise


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--module", required=True)
    parser.add_argument("--order", required=True)
    parser.add_argument("--status", required=True)
    parser.add_argument("--schema-version", type=int, default=1)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--id-prefix", default="")
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    db = connect(args.store, args.module)
    for i in range(args.count):
        order = args.order if args.count == 1 else f"{args.order}-{i}"
        event_id = f"{args.id_prefix}{order}-{args.status}"
        try:
            seq = change_status(db, order, args.status, args.schema_version, event_id, args.hold)
        except sqlite3.IntegrityError as refused:  # the message starts with the reason code
            print(f"refused: {refused}", flush=True)
            return 1
        print(f"appended seq {seq}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except sqlite3.Error as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
