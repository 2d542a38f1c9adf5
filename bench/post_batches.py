#!/usr/bin/env python3
"""bench/post_batches.py PORT FILE [BATCH]: POST the events of an NDJSON file to evident serve's
/events in batch mode (application/cloudevents-batch+json), BATCH (1,000) events per request, one
keep-alive connection, streaming the file (memory stays flat however long it is). Exits 1 unless
every request is answered 200."""
import http.client
import sys

port, path = int(sys.argv[1]), sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
headers = {"Content-Type": "application/cloudevents-batch+json"}
sent = 0


def post(lines):
    global sent
    connection.request("POST", "/events", body="[" + ",".join(lines) + "]", headers=headers)
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != 200:
        sys.exit("answer %d after %d events: %s" % (answer.status, sent, body[:200]))
    sent += len(lines)


lines = []
with open(path) as events:
    for line in events:
        line = line.strip()
        if line:
            lines.append(line)
        if len(lines) == batch:
            post(lines)
            lines = []
if lines:
    post(lines)
print(sent)
