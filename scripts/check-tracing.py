#!/usr/bin/env python3
"""An event's trace context from `outbox append` to the effect's call, and evident's own spans.

Starts a local OTLP/HTTP receiver and a stock service (both record what they get), then runs
the real commands on a copy of examples/orders: `outbox append` of order-420's events, each
carrying a W3C traceparent and a tracestate; `relay --once` to a file; `consume` of what the
relay wrote; `effects run`; `evidence`. Checks that the receipt and the evidence keep each
event's traceparent and tracestate, that the stock service got a traceparent of the event's
trace whose parent is evident's effect span, and that the receiver holds an `evident.relay`, an
`evident.decide` and an `evident.effect` span tied to the event's trace. Then the same events
go through a NATS JetStream server (scripts/nats.sh: started here, stopped after) from the relay
to `consume --from`, and their receipts keep their trace context too; and an event posted to
`evident serve --otlp-endpoint` is decided in a batch whose span joins the event's trace.

Usage: check-tracing.py EVIDENT_BINARY
"""
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACESTATE = "vendor=opaque,other=1"
SERVE_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


class Recorder(http.server.ThreadingHTTPServer):
    def __init__(self):
        self.requests = []  # (path, headers, body)
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.requests.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def serve(recorder):
    threading.Thread(target=recorder.serve_forever, daemon=True).start()


failures = []


def check(condition, what):
    print(("ok - " if condition else "not ok - ") + what)
    if not condition:
        failures.append(what)


def run(binary, args, cwd, env):
    done = subprocess.run([binary] + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        print("# " + " ".join(args) + " exited %d\n%s%s" % (done.returncode, done.stdout, done.stderr))
        raise SystemExit(1)
    return done.stdout


def spans_of(collector):
    spans = []
    for path, _, body in collector.requests:
        check(path == "/v1/traces", "the collector is posted to /v1/traces (%s)" % path)
        for resource in json.loads(body)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                spans.extend(scope["spans"])
    return spans


def through_jetstream(binary, work, env, contracts, config, by_id):
    """The same events through a real broker: a NATS JetStream server (scripts/nats.sh)."""
    nats_dir = work / "nats"
    started = subprocess.run(["bash", str(ROOT / "scripts" / "nats.sh"), "start", str(nats_dir)],
                             capture_output=True, text=True, timeout=60)
    if started.returncode != 0:
        print("# nats-server did not start:\n" + started.stdout + started.stderr)
        raise SystemExit(1)
    url = started.stdout.strip()
    try:
        run(binary, ["outbox", "append", "--store", "sqlite:producer-js.db", "--contracts",
                     contracts, "events.ndjson"], work, env)
        run(binary, ["relay", "--store", "sqlite:producer-js.db", "--to", url, "--stream", "TRACES",
                     "--once"], work, env)
        run(binary, ["consume", "--config", config, "--store", "sqlite:consumer-js.db", "--from",
                     url, "--stream", "TRACES", "--until-idle", "2"], work, env)
        packet = json.loads(run(binary, ["evidence", "order-420", "--store",
                                         "sqlite:consumer-js.db", "--format", "json"], work, env))
        applied = [a for c in packet["consumers"] for a in c.get("applied", [])]
        check(applied and all(a["traceparent"] == by_id[a["id"]]["traceparent"] and
                              a["tracestate"] == TRACESTATE for a in applied),
              "through JetStream, each receipt keeps its event's trace context (%d applied)" %
              len(applied))
    finally:
        subprocess.run(["bash", str(ROOT / "scripts" / "nats.sh"), "stop", str(nats_dir)],
                       capture_output=True, timeout=60)


def through_serve(binary, work, env, config, collector):
    """The daemon: an event posted to `evident serve --otlp-endpoint` is decided in a batch whose
    span is a child of the event's trace, exported before the daemon exits on SIGTERM."""
    import re
    import signal
    import urllib.request
    event = {"specversion": "1.0", "id": "evt-serve-1", "source": "training://orders/checkout",
             "type": "order.status.changed", "subject": "order-900",
             "traceparent": "00-%s-00000000000000aa-01" % SERVE_TRACE_ID,
             "data": {"schemaVersion": 1, "orderId": "order-900", "status": "paid"}}
    daemon = subprocess.Popen([binary, "serve", "--config", config, "--store", "sqlite:served.db",
                               "--listen", "127.0.0.1:0", "--no-effects", "--otlp-endpoint",
                               collector.url], cwd=work, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = daemon.stderr.readline()
        port = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        check(port is not None, "serve listens: " + line.strip())
        request = urllib.request.Request(
            "http://127.0.0.1:%s/events" % port.group(1), data=json.dumps(event).encode(),
            headers={"Content-Type": "application/cloudevents+json"}, method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            check(answer.status == 200, "serve answered the event 200")
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    check(daemon.returncode == 0, "serve exits 0 on SIGTERM (%s)" % daemon.returncode)
    decided = [s for s in spans_of(collector) if s["name"] == "evident.decide" and
               s["traceId"] == SERVE_TRACE_ID and s.get("parentSpanId") == "00000000000000aa"]
    check(len(decided) == 1, "serve's decision batch span is a child of the posted event's span")


def main():
    binary = os.path.abspath(sys.argv[1])
    collector, stock = Recorder(), Recorder()
    serve(collector)
    serve(stock)
    work = pathlib.Path(tempfile.mkdtemp(prefix="evident-tracing-"))
    try:
        shutil.copytree(ROOT / "examples" / "orders", work / "orders")
        events = []
        for n, line in enumerate(open(ROOT / "examples" / "orders" / "events.ndjson")):
            if '"order-420"' not in line:
                continue
            event = json.loads(line)
            event["traceparent"] = "00-%s-%016x-01" % (TRACE_ID, n + 1)
            event["tracestate"] = TRACESTATE
            events.append(event)
        check(len(events) >= 1, "order-420 has events in examples/orders/events.ndjson")
        (work / "events.ndjson").write_text("".join(json.dumps(e) + "\n" for e in events))
        env = dict(os.environ, STOCK_SERVICE_URL=stock.url + "/reservations",
                   STOCK_RELEASE_URL=stock.url + "/releases")
        otlp = ["--otlp-endpoint", collector.url]
        contracts = str(work / "orders" / "contracts")
        run(binary, ["outbox", "append", "--store", "sqlite:producer.db", "--contracts", contracts,
                     "events.ndjson"], work, env)
        run(binary, ["relay", "--store", "sqlite:producer.db", "--to", "file:relayed.ndjson",
                     "--once"] + otlp, work, env)
        relayed = (work / "relayed.ndjson").read_text().splitlines()
        check([json.loads(l)["traceparent"] for l in relayed] == [e["traceparent"] for e in events],
              "the relay publishes each event with its traceparent")
        config = str(work / "orders" / "evident.yaml")
        run(binary, ["consume", "--config", config, "--store", "sqlite:consumer.db", "--input",
                     "relayed.ndjson"] + otlp, work, env)
        run(binary, ["effects", "run", "--config", config, "--store", "sqlite:consumer.db",
                     "--until-idle", "1"] + otlp, work, env)
        packet = json.loads(run(binary, ["evidence", "order-420", "--store", "sqlite:consumer.db",
                                         "--format", "json"], work, env))
        applied = [a for c in packet["consumers"] for a in c.get("applied", [])]
        by_id = {e["id"]: e for e in events}
        check(applied and all(a["traceparent"] == by_id[a["id"]]["traceparent"] for a in applied),
              "each receipt's evidence names its event's traceparent (%d applied)" % len(applied))
        check(all(a["tracestate"] == TRACESTATE for a in applied),
              "each receipt's evidence keeps its event's tracestate")
        text = run(binary, ["evidence", "order-420", "--store", "sqlite:consumer.db"], work, env)
        check("trace 00-" + TRACE_ID in text, "the evidence text shows the trace")

        calls = [h for path, h, _ in stock.requests if path == "/reservations"]
        check(len(calls) == 1, "the stock service was called once for order-420 (%d)" % len(calls))
        header = {k.lower(): v for k, v in calls[0].items()}.get("traceparent", "") if calls else ""
        check(header.startswith("00-" + TRACE_ID + "-"),
              "the effect call carries a traceparent of the event's trace: " + header)
        spans = spans_of(collector)
        names = sorted({s["name"] for s in spans})
        check(names == ["evident.decide", "evident.effect", "evident.relay"],
              "the collector has relay, decide and effect spans: %s" % names)
        effect = [s for s in spans if s["name"] == "evident.effect"]
        check(len(effect) == 1 and effect[0]["traceId"] == TRACE_ID and
              header.split("-")[2:3] == [effect[0]["spanId"]],
              "the effect span is in the event's trace, and the call's parent is that span")
        paid = [e for e in events if e["type"].endswith(".paid")][-1]
        check(len(effect) == 1 and effect[0].get("parentSpanId") == paid["traceparent"].split("-")[2],
              "the effect span's parent is the span of the event that triggered it")
        through_jetstream(binary, work, env, contracts, config, by_id)
        through_serve(binary, work, env, config, collector)
        for name in ("evident.relay", "evident.decide"):
            linked = [s for s in spans if s["name"] == name and
                      any(link["traceId"] == TRACE_ID for link in s["links"])]
            check(len(linked) >= 1, name + " spans are linked to the events' trace")
    finally:
        collector.shutdown()
        stock.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("tracing: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
