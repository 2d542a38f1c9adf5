#!/usr/bin/env python3
"""bench/status_events.py N PATH: N status changes of N/50 orders (examples/orders'
order.status.changed, schema version 1), in order per order, one CloudEvent per line."""
import json
import sys

n, path = int(sys.argv[1]), sys.argv[2]
subjects = max(1, n // 50)
with open(path, "w") as out:
    for i in range(n):
        order = "order-%d" % (i % subjects)
        out.write(json.dumps({"specversion": "1.0", "id": "evt-%d" % i,
                              "source": "training://orders/checkout",
                              "type": "order.status.changed", "subject": order,
                              "data": {"schemaVersion": 1, "orderId": order,
                                       "status": "s%d" % i}}, separators=(",", ":")) + "\n")
