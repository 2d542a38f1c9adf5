#!/usr/bin/env python3
"""The progress line of long commands (--progress auto|always|never), seen as a user sees it:
standard error on a pseudo-terminal, then on a pipe.

  check-progress.py EVIDENT_BINARY SOURCE_DIR

Exit 0 when every case holds; otherwise each failure, on standard error."""
import os
import pty
import subprocess
import sys
import tempfile

evident, source = sys.argv[1], sys.argv[2]
orders = os.path.join(source, "examples", "orders")
failures = []


def run_on_tty(args, stdin_path=None):
    """Runs evident with standard error on a pseudo-terminal: (exit code, what the terminal got)."""
    master, slave = pty.openpty()
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    process = subprocess.Popen([evident] + args, stdin=stdin, stdout=subprocess.DEVNULL,
                               stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    if stdin_path:
        stdin.close()
    return process.wait(), seen.decode("utf-8", "replace")


def check(name, condition, seen):
    if not condition:
        failures.append(f"{name}: the terminal got {seen[-600:]!r}")


with tempfile.TemporaryDirectory() as work:
    # 20,000 events: the example's lines again and again (later copies are duplicates).
    lines = open(os.path.join(orders, "events.ndjson"), "rb").read().splitlines(keepends=True)
    big = os.path.join(work, "events.ndjson")
    with open(big, "wb") as out:
        for _ in range(20000 // len(lines)):
            out.writelines(lines)
    config = os.path.join(orders, "evident.yaml")

    def consume(name, *extra, stdin_path=None):
        store = "sqlite:" + os.path.join(work, name + ".db")
        args = ["consume", "--config", config, "--store", store] + list(extra)
        return run_on_tty(args, stdin_path)

    code, seen = consume("file", "--input", big)
    check("consume of a file on a terminal (exit)", code == 0, seen)
    check("consume of a file on a terminal shows a bar", "[####################] 100%" in seen, seen)
    check("consume of a file on a terminal counts the events", "20000 events" in seen, seen)
    check("consume of a file on a terminal says the time left", " left" in seen, seen)
    check("consume of a file on a terminal lists outcomes", "duplicate" in seen, seen)

    code, seen = consume("pipe", "--input", "-", stdin_path=big)  # a file as stdin: size known
    check("consume of a redirected file shows a bar", "100%" in seen, seen)

    code, seen = consume("never", "--input", big, "--progress", "never")
    check("--progress never shows nothing", "\r" not in seen and "events" not in seen, seen)

    # A pipe: the size is not known, so a count and a rate without a bar.
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    feeder = subprocess.Popen(["sh", "-c", f'cat "{big}" > "{fifo}"'])
    code, seen = consume("fifo", "--input", fifo)
    feeder.wait()
    check("consume of a pipe counts without a bar", "20000 events" in seen and "%" not in seen,
          seen)

    # Standard error not a terminal: auto shows nothing, always shows the line.
    store = "sqlite:" + os.path.join(work, "auto.db")
    result = subprocess.run([evident, "consume", "--config", config, "--store", store, "--input",
                             big], capture_output=True, text=True)
    check("auto on a pipe shows nothing", "\r" not in result.stderr, result.stderr)
    store = "sqlite:" + os.path.join(work, "always.db")
    result = subprocess.run([evident, "consume", "--config", config, "--store", store, "--input",
                             big, "--progress", "always"], capture_output=True, text=True)
    check("always on a pipe shows the line", "100%" in result.stderr, result.stderr)

    # outbox append: the same line, its refusals counted.
    contracts = os.path.join(orders, "contracts")
    store = "sqlite:" + os.path.join(work, "outbox.db")
    code, seen = run_on_tty(["outbox", "append", "--store", store, "--contracts", contracts,
                             "--schema-version-at", "/data/schemaVersion", big])
    check("outbox append on a terminal shows a bar", "[####################] 100%" in seen, seen)
    check("outbox append counts its refusals", " refused" in seen, seen)

    # relay --once: the rows pending when it began.
    code, seen = run_on_tty(["relay", "--store", store, "--to",
                             "file:" + os.path.join(work, "relayed.ndjson"), "--once"])
    check("relay --once on a terminal shows a bar of rows", "100%" in seen and " rows" in seen,
          seen)

    # quarantine replay: records counted; a bar when the records are named.
    replay = ["quarantine", "replay", "--config", config, "--store",
              "sqlite:" + os.path.join(work, "file.db"), "--by", "check", "--note", "progress"]
    code, seen = run_on_tty(replay + ["1", "2"])
    check("quarantine replay of named records shows a bar", "[####################] 100%" in seen
          and "2 records" in seen, seen)
    code, seen = run_on_tty(replay + ["--all"])
    check("quarantine replay --all counts its records", " records" in seen and "refused again"
          in seen, seen)

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("progress lines: ok")
