#!/usr/bin/env python3
"""Runs the command samples of README.md and docs/*.md against the current build, so that a
behaviour change fails a test instead of leaving a stale page.

A sample is a code block (fenced, or indented by four spaces) with lines that start with
`$ evident` (a line ending in `\\` continues on the next). The lines after a command, up to the
next command or the end of the block, are its expected standard output, compared line by line
(trailing spaces ignored): `...` inside a line matches any text, and a line that is only `...`
matches any number of lines. A command shown without output must succeed (exit 0); one shown
with output may also answer 1 (a negative answer: a guard denied, lint findings), never more.

Each page is one session: its samples run in order in a fresh directory that links the
repository's `examples/`, with `evident` on PATH, so a later sample sees the store an earlier one
wrote. A page steers its session with HTML comments (invisible when rendered):

  <!-- doc-samples: stock-service ANSWER... -->  starts the example stock service
                                                 (tools/downstream) and exports
                                                 STOCK_SERVICE_URL and STOCK_RELEASE_URL; each
                                                 ANSWER is a --answer of evident-downstream
  <!-- doc-samples: kafka TOPIC:PARTITIONS... -->  starts a mock Kafka cluster (scripts/kafka.sh,
                                                 three brokers) with those topics and exports
                                                 KAFKA_URL (kafka://127.0.0.1:P1,...) and
                                                 KAFKA_DIR (for `scripts/kafka.sh ctl`)
  <!-- doc-samples: postgres -->                 starts a PostgreSQL 15 server (scripts/postgres.sh)
                                                 and exports PG_URL (its database) and
                                                 EVIDENT_PG_MODULE (evident_pg.so of this build,
                                                 copied where the server's OS user reads it)
  <!-- doc-samples: skip REASON -->              the next block is not run (REASON is printed)

Usage: doc-samples.py BUILD_DIR [PAGE...]   (pages default to README.md and docs/*.md)
Exit 0 when every sample matched, 1 otherwise; every mismatch is printed with both texts.
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMAND_SECONDS_MAX = 120
DIRECTIVE = re.compile(r"^\s*<!--\s*doc-samples:\s*(\S+)\s*(.*?)\s*-->\s*$")


class Block:
    def __init__(self, line, lines, skip):
        self.line = line  # 1-based line of the block's first line in its page
        self.lines = lines  # without the block's indentation
        self.skip = skip  # the reason it is not run, or None


def code_blocks(text):
    """Yields (first line number, lines, directives before it) for each code block."""
    lines = text.split("\n")
    pending = []
    i = 0
    while i < len(lines):
        line = lines[i]
        d = DIRECTIVE.match(line)
        if d:
            pending.append((d.group(1), d.group(2)))
            i += 1
            continue
        fence = re.match(r"^(\s*)(```+|~~~+)", line)
        if fence:
            indent, mark = fence.group(1), fence.group(2)
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(mark):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            yield i - len(body), body, pending
            pending = []
            i += 1
            continue
        previous_blank = i == 0 or lines[i - 1].strip() == ""
        if line.startswith("    ") and previous_blank:
            start = i
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or lines[i].strip() == ""):
                body.append(lines[i][4:])
                i += 1
            while body and body[-1].strip() == "":
                body.pop()
            yield start + 1, body, pending
            pending = []
            continue
        i += 1


def samples(block_lines):
    """The (command, expected output lines) pairs of a block's lines."""
    out = []
    i = 0
    while i < len(block_lines):
        line = block_lines[i]
        if not line.startswith("$ "):
            i += 1
            continue
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(block_lines):
            i += 1
            command = command[:-1] + " " + block_lines[i].strip()
        i += 1
        expected = []
        while i < len(block_lines) and not block_lines[i].startswith("$ "):
            expected.append(block_lines[i].rstrip())
            i += 1
        while expected and expected[-1] == "":
            expected.pop()
        out.append((command, expected))
    return out


def line_pattern(expected):
    parts = [re.escape(p) for p in expected.split("...")]
    return re.compile("^" + ".*".join(parts) + "$")


def matches(expected, actual):
    """Whether `actual` lines match `expected` lines (see the module's comment)."""
    memo = {}

    def at(e, a):
        key = (e, a)
        if key in memo:
            return memo[key]
        if e == len(expected):
            result = a == len(actual)
        elif expected[e].strip() == "...":
            result = any(at(e + 1, k) for k in range(a, len(actual) + 1))
        else:
            result = a < len(actual) and bool(line_pattern(expected[e]).match(actual[a]))
            result = result and at(e + 1, a + 1)
        memo[key] = result
        return result

    return at(0, 0)


class Session:
    def __init__(self, build):
        self.build = build
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="evident-doc-samples-"))
        (self.dir / "examples").symlink_to(ROOT / "examples")
        (self.dir / "scripts").symlink_to(ROOT / "scripts")
        bin_dir = self.dir / ".bin"
        bin_dir.mkdir()
        (bin_dir / "evident").symlink_to(build / "src" / "cli" / "evident")
        self.env = dict(os.environ)
        self.env["PATH"] = str(bin_dir) + os.pathsep + self.env.get("PATH", "")
        self.stock = None
        self.kafka = None
        self.postgres = None

    def start_stock_service(self, answers):
        port_file = self.dir / ".stock.port"
        args = [str(self.build / "tools" / "downstream" / "evident-downstream"), "--listen",
                "127.0.0.1:0", "--port-file", str(port_file), "--log",
                str(self.dir / ".stock.ndjson"), "--dedupe"]
        for answer in answers.split():
            args += ["--answer", answer]
        self.stock = subprocess.Popen(args, cwd=self.dir)
        for _ in range(200):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("the stock service did not start")
        port = port_file.read_text().strip()
        self.env["STOCK_SERVICE_URL"] = "http://127.0.0.1:%s/reservations" % port
        self.env["STOCK_RELEASE_URL"] = "http://127.0.0.1:%s/releases" % port

    def start_kafka(self, topics):
        self.kafka = self.dir / ".kafka"
        env = dict(self.env)
        env["EVIDENT_KAFKA_MOCK"] = str(self.build / "tools" / "kafka-mock" / "evident-kafka-mock")
        done = subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "start",
                               str(self.kafka), "3"] + topics.split(), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise RuntimeError("the mock Kafka cluster did not start: " + done.stderr)
        self.env["KAFKA_URL"] = done.stdout.strip()
        self.env["KAFKA_DIR"] = str(self.kafka)
        self.env["EVIDENT_KAFKA_MOCK"] = env["EVIDENT_KAFKA_MOCK"]

    def start_postgres(self):
        self.postgres = self.dir / ".postgres"
        done = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "start",
                               str(self.postgres)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError("PostgreSQL did not start: " + done.stderr)
        self.env["PG_URL"] = done.stdout.strip()
        data = pathlib.Path((self.postgres / "data").read_text().strip())
        module = data / "evident_pg.so"
        shutil.copyfile(self.build / "src" / "pg_ext" / "evident_pg.so", module)
        module.chmod(0o644)
        self.env["EVIDENT_PG_MODULE"] = str(module)

    def run(self, command):
        done = subprocess.run(["bash", "-c", command], cwd=self.dir, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=COMMAND_SECONDS_MAX)
        return done.returncode, done.stdout, done.stderr

    def close(self):
        if self.postgres is not None:
            subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "stop",
                            str(self.postgres)], timeout=60)
        if self.kafka is not None:
            subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "stop", str(self.kafka)],
                           timeout=30)
        if self.stock is not None:
            self.stock.send_signal(signal.SIGTERM)
            try:
                self.stock.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.stock.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def check_page(build, page):
    """Runs one page's samples; returns (samples run, failures as text)."""
    text = page.read_text()
    name = page.relative_to(ROOT)
    failures = []
    ran = 0
    session = None
    try:
        for first_line, lines, directives in code_blocks(text):
            skip = None
            found = samples(lines)
            for kind, argument in directives:
                if kind == "skip":
                    skip = argument or "(no reason given)"
                elif kind == "stock-service":
                    session = session or Session(build)
                    session.start_stock_service(argument)
                elif kind == "kafka":
                    session = session or Session(build)
                    session.start_kafka(argument)
                elif kind == "postgres":
                    session = session or Session(build)
                    session.start_postgres()
                else:
                    failures.append("%s:%d: unknown doc-samples directive '%s'" %
                                    (name, first_line, kind))
            if not found:
                continue
            if skip is not None:
                print("%s:%d: skipped: %s" % (name, first_line, skip))
                continue
            session = session or Session(build)
            for command, expected in found:
                ran += 1
                code, out, err = session.run(command)
                actual = [l.rstrip() for l in out.rstrip("\n").split("\n")] if out else []
                allowed = (0,) if not expected else (0, 1)
                problem = None
                if code not in allowed:
                    problem = "exit %d (allowed: %s)" % (code, allowed)
                elif expected and not matches(expected, actual):
                    problem = "the output differs"
                if problem:
                    failures.append(
                        "%s:%d: $ %s\n  %s\n  --- documented ---\n%s\n  --- produced ---\n%s%s" %
                        (name, first_line, command, problem,
                         "\n".join("  " + l for l in expected),
                         "\n".join("  " + l for l in actual),
                         ("\n  --- standard error ---\n" + err.rstrip()) if err.strip() else ""))
    finally:
        if session is not None:
            session.close()
    return ran, failures


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = pathlib.Path(sys.argv[1]).resolve()
    if not (build / "src" / "cli" / "evident").exists():
        print("doc-samples: %s has no src/cli/evident" % build)
        return 2
    pages = [pathlib.Path(p).resolve() for p in sys.argv[2:]] or \
        [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    total = 0
    failures = []
    for page in pages:
        ran, failed = check_page(build, page)
        total += ran
        failures += failed
        print("%s: %d sample(s), %d failed" % (page.relative_to(ROOT), ran, len(failed)))
    for failure in failures:
        print(failure)
    print("doc-samples: %d command(s) run, %d failed" % (total, len(failures)))
    return 1 if failures or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
