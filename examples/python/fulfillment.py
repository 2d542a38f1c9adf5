#!/usr/bin/python3
"""Seed 002's fulfillment service in Python: it reads the order events from NATS JetStream with
the NATS C client (Debian's libnats, through ctypes: Debian packages no Python NATS client), and
for each one asks evident, INSIDE its own database transaction, what to apply:

    BEGIN
      SELECT * FROM evident_decide('reservations', event)   -- the events to apply now, in order
      ... the service's own writes for each applied one (its reservations table) ...
    COMMIT
    ack the message                                           -- after the commit, never before

evident's ledger, ordering, deferral, quarantine and evidence commit with the service's own
writes, or roll back with them: a crash between the two leaves neither, and the broker's
redelivery is decided afresh.

    fulfillment.py (--pg URL | --sqlite PATH --module evident_sqlite.so) --consumer reservations
        (--nats nats://HOST:PORT [--subject 'evident.>'] --durable NAME | --events FILE)
        [--until-idle SECONDS] [--hold-after N]

Prints one line per decided row: "order-417 v3 deferred", "order-417 v3 applied drained". Exit
0 when every event was decided and committed, 2 on any other error. --hold-after N stops after
the N-th decision, before its COMMIT, and waits (a test kills the process there).
A deadlock or serialization failure (PostgreSQL 40P01, 40001) or a busy SQLite file is retried.
"""
import argparse
import base64
import ctypes
import json
import sqlite3
import sys
import time

RETRYABLE_SQLSTATES = {"40P01", "40001"}
RETRIES_MAX = 20


class JetStream:
    """A durable pull consumer of one stream, through libnats (the NATS C client)."""

    NATS_TIMEOUT = 26

    class MsgList(ctypes.Structure):
        _fields_ = [("msgs", ctypes.POINTER(ctypes.c_void_p)), ("count", ctypes.c_int)]

    def __init__(self, url, subject, durable):
        lib = ctypes.CDLL("libnats.so.3.4")
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        lib.natsStatus_GetText.restype = cp
        lib.natsMsg_GetData.restype = vp
        lib.natsMsg_GetData.argtypes = [vp]
        lib.natsMsg_GetDataLength.argtypes = [vp]
        lib.natsMsg_Ack.argtypes = [vp, vp]
        lib.natsConnection_ConnectTo.argtypes = [ctypes.POINTER(vp), cp]
        lib.natsConnection_JetStream.argtypes = [ctypes.POINTER(vp), vp, vp]
        lib.js_PullSubscribe.argtypes = [ctypes.POINTER(vp), vp, cp, cp, vp, vp, vp]
        lib.natsSubscription_Fetch.argtypes = [ctypes.POINTER(JetStream.MsgList), vp, ctypes.c_int,
                                               ctypes.c_int64, vp]
        lib.natsMsgList_Destroy.argtypes = [ctypes.POINTER(JetStream.MsgList)]
        for name in ("natsSubscription_Destroy", "jsCtx_Destroy", "natsConnection_Destroy"):
            getattr(lib, name).argtypes = [vp]
        self.lib = lib
        self.nc, self.js, self.sub = vp(), vp(), vp()
        self._check(lib.natsConnection_ConnectTo(ctypes.byref(self.nc), url.encode()), "connect")
        self._check(lib.natsConnection_JetStream(ctypes.byref(self.js), self.nc, None), "jetstream")
        # The stream is the one holding `subject` (evident's relay publishes under
        # "<prefix>.<partition>": "evident.>" by default).
        self._check(lib.js_PullSubscribe(ctypes.byref(self.sub), self.js, subject.encode(),
                                         durable.encode(), None, None, None),
                    "pull subscribe to " + subject)

    def _check(self, status, what):
        if status != 0:
            raise RuntimeError("nats: %s: %s" % (what, self.lib.natsStatus_GetText(status).decode()))

    def fetch(self, batch, timeout_ms):
        """Up to `batch` messages as (handle, bytes); none when the stream had none in time."""
        msgs = JetStream.MsgList()
        status = self.lib.natsSubscription_Fetch(ctypes.byref(msgs), self.sub, batch, timeout_ms,
                                                 None)
        if status == JetStream.NATS_TIMEOUT:
            return []
        self._check(status, "fetch")
        out = []
        for i in range(msgs.count):
            handle = msgs.msgs[i]
            size = self.lib.natsMsg_GetDataLength(handle)
            out.append((handle, ctypes.string_at(self.lib.natsMsg_GetData(handle), size)))
            msgs.msgs[i] = None  # kept: destroyed by ack()
        self.lib.natsMsgList_Destroy(ctypes.byref(msgs))
        return out

    def ack(self, handle):
        try:
            self._check(self.lib.natsMsg_Ack(handle, None), "ack")
        finally:
            self.lib.natsMsg_Destroy(ctypes.c_void_p(handle))

    def close(self):
        self.lib.natsSubscription_Destroy(self.sub)
        self.lib.jsCtx_Destroy(self.js)
        self.lib.natsConnection_Destroy(self.nc)


class PostgresStore:
    """The service's PostgreSQL database, where evident's store and functions also live."""

    def __init__(self, url):
        import psycopg  # Debian's python3-psycopg
        self.psycopg = psycopg
        self.db = psycopg.connect(url, autocommit=True)
        self.db.execute("CREATE TABLE IF NOT EXISTS reservations(order_id text PRIMARY KEY,"
                        " status text NOT NULL, version bigint NOT NULL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS reservation_log(order_id text NOT NULL,"
                        " version bigint NOT NULL, event_id text NOT NULL,"
                        " PRIMARY KEY(order_id, version))")

    def begin(self):
        self.db.execute("BEGIN")

    def commit(self):
        self.db.execute("COMMIT")

    def rollback(self):
        self.db.execute("ROLLBACK")

    def decide(self, consumer, event):
        rows = self.db.execute(
            "SELECT position, outcome, reason, key, subject, subject_version, schema_version,"
            " event, drained, adapter FROM evident_decide(%s, %s)", (consumer, event)).fetchall()
        return [dict(position=r[0], outcome=r[1], reason=r[2], key=r[3], subject=r[4],
                     subject_version=r[5], schema_version=r[6], event=bytes(r[7]),
                     drained=r[8], adapter=r[9]) for r in rows]

    def write(self, sql, params):
        self.db.execute(sql.replace("?", "%s"), params)

    def retryable(self, error):
        return isinstance(error, self.psycopg.Error) and error.sqlstate in RETRYABLE_SQLSTATES


class SqliteStore:
    """The service's SQLite file, with evident's extension loaded into its connection."""

    def __init__(self, path, module):
        self.db = sqlite3.connect(path, isolation_level=None, timeout=10)
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.enable_load_extension(True)
        self.db.load_extension(module)
        self.db.enable_load_extension(False)
        self.db.execute("CREATE TABLE IF NOT EXISTS reservations(order_id TEXT PRIMARY KEY,"
                        " status TEXT NOT NULL, version INTEGER NOT NULL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS reservation_log(order_id TEXT NOT NULL,"
                        " version INTEGER NOT NULL, event_id TEXT NOT NULL,"
                        " PRIMARY KEY(order_id, version))")

    def begin(self):
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self):
        self.db.execute("COMMIT")

    def rollback(self):
        self.db.execute("ROLLBACK")

    def decide(self, consumer, event):
        (answer,) = self.db.execute("SELECT evident_decide(?, ?)", (consumer, event)).fetchone()
        rows = json.loads(answer)
        for row in rows:
            text = row.pop("event", None)
            encoded = row.pop("event_base64", None)
            row["event"] = text.encode() if text is not None else base64.b64decode(encoded)
        return rows

    def write(self, sql, params):
        self.db.execute(sql, params)

    def retryable(self, error):
        return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY


def apply(store, row):
    """The service's own writes for one applied event: its reservation, and a log row whose key
    refuses a second write of the same order version."""
    event = json.loads(row["event"])
    order, version = row["subject"], row["subject_version"]
    status = "reserved" if event["type"].endswith(".paid") else "released"
    store.write("INSERT INTO reservations(order_id, status, version) VALUES(?, ?, ?)"
                " ON CONFLICT(order_id) DO UPDATE SET status=excluded.status,"
                " version=excluded.version", (order, status, version))
    store.write("INSERT INTO reservation_log(order_id, version, event_id) VALUES(?, ?, ?)",
                (order, version, event["id"]))


def describe(row):
    version = "v%s" % row["subject_version"] if row["subject_version"] is not None else "-"
    words = [row["subject"] or "-", version, row["outcome"]]
    if row["reason"]:
        words.append(row["reason"])
    if row["drained"]:
        words.append("drained")
    return " ".join(words)


def decide_one(store, consumer, event, hold):
    """One event in one transaction of the service's, retried when the database says so."""
    for attempt in range(RETRIES_MAX):
        began = False
        try:
            store.begin()
            began = True
            rows = store.decide(consumer, event)
            for row in rows:
                # An applied row with a reason is evident's own (the owner's answer to a replay
                # request, recorded on the gap): nothing for the service to apply.
                if row["outcome"] == "applied" and row["reason"] is None:
                    apply(store, row)
            if hold:
                print("held", flush=True)
                time.sleep(3600)
            store.commit()
            return rows
        except Exception as error:
            if began:
                try:
                    store.rollback()
                except Exception:  # the original error says more
                    pass
            if not store.retryable(error) or attempt + 1 == RETRIES_MAX:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


def events_of(args):
    """(ack, bytes) for each event: from JetStream, or from an NDJSON file."""
    if args.events:
        with open(args.events, "rb") as f:
            for line in f:
                if line.strip():
                    yield None, line.rstrip(b"\n")
        return
    js = JetStream(args.nats, args.subject, args.durable)
    try:
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < args.until_idle:
            batch = js.fetch(10, 500)
            if batch:
                idle_since = time.monotonic()
            for handle, data in batch:
                yield (lambda h=handle: js.ack(h)), data
    finally:
        js.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg")
    parser.add_argument("--sqlite")
    parser.add_argument("--module", help="evident_sqlite.so, with --sqlite")
    parser.add_argument("--consumer", default="reservations")
    parser.add_argument("--nats")
    parser.add_argument("--subject", default="evident.>",
                        help="a subject of the stream (evident's relay: evident.<partition>)")
    parser.add_argument("--durable", default="fulfillment-py")
    parser.add_argument("--events", help="an NDJSON file instead of JetStream")
    parser.add_argument("--until-idle", type=float, default=2.0)
    parser.add_argument("--hold-after", type=int, default=0)
    args = parser.parse_args()
    if bool(args.pg) == bool(args.sqlite) or bool(args.nats) == bool(args.events):
        parser.error("give --pg or --sqlite, and --nats or --events")
    try:
        store = PostgresStore(args.pg) if args.pg else SqliteStore(args.sqlite, args.module)
        decided = 0
        for ack, event in events_of(args):
            decided += 1
            rows = decide_one(store, args.consumer, event, decided == args.hold_after)
            for row in rows:
                print(describe(row), flush=True)
            if ack is not None:
                ack()  # after the commit: a crash before it makes the broker deliver again
        return 0
    except Exception as error:  # one line, the reason first
        print("error: %s" % error, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
