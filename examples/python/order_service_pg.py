#!/usr/bin/python3
"""An order service in Python on PostgreSQL: each status change of an order and the event that
announces it are written in ONE transaction of the service's own connection. The event is
checked against the contracts the store holds (evident contracts push) by evident_append,
inside that transaction: a refused event raises, and the order's change rolls back with it.

    order_service_pg.py --url postgresql://... --order order-1 --status paid \
        [--schema-version 2] [--count N] [--hold]

The functions come from `evident store install-functions` (docs/any-language.md); the URL's
search_path names the store's schema. Prints one line per event ("appended seq 7", or
"refused: schema-violation: ..."); exit 0 when every event was appended (or a duplicate), 1
when one was refused, 2 on any other error. --hold stops after the append, before COMMIT, and
waits (a test kills the process there). Uses Debian's python3-psycopg (psycopg 3).
"""
import argparse
import json
import sys
import time

import psycopg

# SQLSTATEs of evident_append's refusals: the event refused by its contract, its id taken by
# other bytes. The message starts with the reason code.
REFUSED = {"EV001", "EV002"}


def status_event(order, status, schema_version, event_id):
    return json.dumps({
        "specversion": "1.0", "id": event_id, "source": "training://orders/checkout",
        "type": "order.status.changed", "subject": order,
        "data": {"schemaVersion": schema_version, "orderId": order, "status": status},
    }, separators=(",", ":"))


def change_status(db, order, status, schema_version, event_id, hold=False):
    """The order's new status and its event, committed together or not at all."""
    with db.transaction():  # COMMIT at the end of the block, ROLLBACK when it raises
        db.execute("INSERT INTO orders(id, status, version) VALUES(%s, %s, 1) "
                   "ON CONFLICT(id) DO UPDATE SET status=excluded.status, "
                   "version=orders.version+1", (order, status))
        event = status_event(order, status, schema_version, event_id)
        (seq,) = db.execute("SELECT evident_append(%s)", (event.encode(),)).fetchone()
        if hold:
            print("held", flush=True)
            time.sleep(3600)
        return seq


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--order", required=True)
    parser.add_argument("--status", required=True)
    parser.add_argument("--schema-version", type=int, default=1)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    with psycopg.connect(args.url, autocommit=True) as db:
        db.execute("CREATE TABLE IF NOT EXISTS orders("
                   "id text PRIMARY KEY, status text NOT NULL, version bigint NOT NULL)")
        for i in range(args.count):
            order = args.order if args.count == 1 else f"{args.order}-{i}"
            event_id = f"{order}-{args.status}"
            try:
                seq = change_status(db, order, args.status, args.schema_version, event_id,
                                    args.hold)
            except psycopg.Error as error:
                if error.sqlstate not in REFUSED:
                    raise
                print(f"refused: {error.diag.message_primary}", flush=True)
                return 1
            print(f"appended seq {seq}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except psycopg.Error as error:
        print(f"error: {error.sqlstate}: {error}", file=sys.stderr)
        sys.exit(2)
