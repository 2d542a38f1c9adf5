// The operator page of `evident serve` in a real browser (Debian's Chromium through
// puppeteer-core): the evidence timeline, gaps, quarantine (replay and discard from the page,
// checked through the admin API), live counters, no console errors and no failed requests.
//
//   cd tests/browser && npm ci && node operator_page.test.mjs
//
// Environment:
//   EVIDENT_BIN          the evident binary (default /work/main/build/src/cli/evident)
//   EVIDENT_SOURCE_DIR   the source tree with examples/orders (default: two levels up)
//   EVIDENT_PAGE_DIR     passed to the daemon when set: serve the page files from disk instead
//                        of the compiled-in copy (the default; the test then checks that the
//                        copy is the one in src/serve/page)
//   CHROMIUM_BIN         the browser (default /usr/bin/chromium)
//   EVIDENT_SCREENSHOTS  1: write docs/operator-page-evidence.png, -quarantine.png and -charts.png
//   EVIDENT_KEEP_TMP     1: keep the temporary directory (it is kept on failure anyway)
//
// The scenario: phase A runs the daemon with a contract that does not yet read schema
// version 4 of order.status.changed (no adapter) and a 1 s gap deadline, so the v4 events are
// quarantined as contract-update-required and order-418's gap goes overdue; phase B restarts it
// on the same store with the example's contracts (v4 read through its adapter), posts the rest
// of examples/orders/events.ndjson, has the effect intents performed against a small stock
// service (order-422's reservation answers 503: unknown; order-418's is postponed while its
// gap is open; by the daemon itself when it runs effects, and by `evident effects run`), and
// then drives the page.
import {spawn} from "node:child_process";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import {fileURLToPath} from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.EVIDENT_BIN || "/work/main/build/src/cli/evident";
const SOURCE = path.resolve(process.env.EVIDENT_SOURCE_DIR || path.join(here, "..", ".."));
const CHROMIUM = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const PAGE_DIR = process.env.EVIDENT_PAGE_DIR || "";
const SCREENSHOTS = process.env.EVIDENT_SCREENSHOTS === "1";
const KEEP_TMP = process.env.EVIDENT_KEEP_TMP === "1";
const TIME_LIMIT_MS = 280_000;  // under ctest's 300 s; a quiet machine takes about 45 s
const TOKEN = "page-test-token-" + Math.random().toString(36).slice(2, 12);
const REPLAYER = "on-call-ann";
const DISCARDER = "on-call-bob";

const children = new Set();
let tmp = "";
let browser = null;
let currentPage = null;
let failed = false;

// ------------------------------------------------------------------ small helpers

class TestFailure extends Error {}

function check(condition, message) {
  if (!condition) throw new TestFailure(message);
}

function ok(message) {
  console.log("ok - " + message);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what, probe, timeoutMs = 10_000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new TestFailure(`timed out after ${timeoutMs} ms waiting for ${what}` +
                            (last instanceof Error ? ` (last error: ${last.message})` : ""));
    }
    await sleep(everyMs);
  }
}

async function readLines(file) {
  return (await fs.readFile(file, "utf8")).split("\n").filter((l) => l.trim() !== "");
}

function subjectOf(line) {
  try {
    return JSON.parse(line).subject;
  } catch {
    return undefined;  // the deliberately broken line
  }
}

// ------------------------------------------------------------------ the daemon

let stock = null;   // the stock service every evident process of the test calls
let stockUrl = "";

function daemonEnv(extra) {
  const env = {...process.env, STOCK_SERVICE_URL: stockUrl, ...extra};
  if (!PAGE_DIR) delete env.EVIDENT_PAGE_DIR;
  return env;
}

async function startDaemon(name, dir, store, tokenFile) {
  const child = spawn(BIN, ["serve", "--config", path.join(dir, "evident.yaml"), "--store", store,
                            "--listen", "127.0.0.1:0", "--admin-token-file", tokenFile,
                            "--metrics-interval-ms", "500"],
                      {cwd: dir, env: daemonEnv(), stdio: ["ignore", "ignore", "pipe"]});
  children.add(child);
  const daemon = {name, child, stderr: "", exit: null};
  daemon.exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      daemon.exit = {code, signal};
      children.delete(child);
      resolve(daemon.exit);
    });
  });
  child.on("error", (e) => {
    daemon.stderr += `\n(spawn failed: ${e.message})`;
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    daemon.stderr += chunk;
  });
  const base = await until(`daemon ${name} to print its address`, () => {
    if (daemon.exit) {
      throw new TestFailure(`daemon ${name} exited (${JSON.stringify(daemon.exit)}): ${daemon.stderr}`);
    }
    const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(daemon.stderr);
    return m ? m[1] : null;
  }, 15_000, 50).catch((e) => {
    throw new TestFailure(`${e.message}\n  stderr of ${name}: ${daemon.stderr.trim()}`);
  });
  daemon.base = base;
  return daemon;
}

async function stopDaemon(daemon) {
  if (daemon.exit === null) daemon.child.kill("SIGTERM");
  const exit = await Promise.race([daemon.exited, sleep(15_000).then(() => null)]);
  check(exit !== null, `daemon ${daemon.name} did not stop within 15 s of SIGTERM`);
  check(exit.code === 0, `daemon ${daemon.name} exited with ${JSON.stringify(exit)} after SIGTERM, not 0:\n${daemon.stderr}`);
  ok(`daemon ${daemon.name} stopped on SIGTERM with exit 0`);
}

async function postEvent(base, bytes) {
  const response = await fetch(base + "/events", {
    method: "POST", headers: {"Content-Type": "application/cloudevents+json"}, body: bytes,
  });
  const text = await response.text();
  check(response.status === 200, `POST /events answered ${response.status}: ${text}\n  for ${bytes}`);
  return JSON.parse(text);
}

async function admin(base, pathAndQuery, init = {}) {
  const response = await fetch(base + pathAndQuery, {
    ...init, headers: {Authorization: "Bearer " + TOKEN, ...(init.headers || {})},
  });
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return {status: response.status, body};
}

// The stock service of the example: a reservation of order-422 answers 503 (its effect stays
// unknown and waits for a person), every other one 200.
async function startStockService() {
  const server = http.createServer((req, res) => {
    const key = String(req.headers["idempotency-key"] || "");
    req.resume();
    req.on("end", () => {
      if (key.includes("order-422")) {
        res.writeHead(503, {"Content-Type": "text/plain"});
        res.end("stock service unavailable");
      } else {
        res.writeHead(200, {"Content-Type": "application/json"});
        res.end(JSON.stringify({reservation: "R-" + key}));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

async function runEffects(dir, store) {
  const child = spawn(BIN, ["effects", "run", "--config", path.join(dir, "evident.yaml"), "--store", store,
                            "--until-idle", "1"],
                      {cwd: dir, env: daemonEnv(), stdio: ["ignore", "pipe", "pipe"]});
  children.add(child);
  let out = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (out += c));
  const exit = await Promise.race([
    new Promise((resolve) => child.on("exit", (code, signal) => resolve({code, signal}))),
    sleep(40_000).then(() => null),
  ]);
  children.delete(child);
  check(exit !== null, "evident effects run did not finish within 40 s:\n" + out);
  check(exit.code === 0, `evident effects run exited ${JSON.stringify(exit)}:\n${out}`);
  return out;
}

// ------------------------------------------------------------------ the scenario's files

async function prepare() {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "evident-page-"));
  const example = path.join(SOURCE, "examples", "orders");
  const tokenFile = path.join(tmp, "admin.token");
  await fs.writeFile(tokenFile, TOKEN + "\n", {mode: 0o600});
  for (const phase of ["a", "b"]) {
    await fs.mkdir(path.join(tmp, phase));
    await fs.cp(path.join(example, "contracts"), path.join(tmp, phase, "contracts"), {recursive: true});
    await fs.copyFile(path.join(example, "evident.yaml"), path.join(tmp, phase, "evident.yaml"));
  }
  // Phase A: orders-projection does not read v4 yet (no adapter), and gaps are due after 1 s.
  const projection = path.join(tmp, "a", "contracts", "consumers", "orders-projection.yaml");
  const before = await fs.readFile(projection, "utf8");
  const without = before.split("\n").filter((l) => !/^\s*via_adapter:/.test(l)).join("\n");
  check(without !== before, `${projection}: no via_adapter line to take out (has the example changed?)`);
  await fs.writeFile(projection, without);
  const fulfillment = path.join(tmp, "a", "contracts", "consumers", "fulfillment.yaml");
  const contract = await fs.readFile(fulfillment, "utf8");
  check(/deadline_seconds:\s*\d+/.test(contract), `${fulfillment}: no deadline_seconds (has the example changed?)`);
  await fs.writeFile(fulfillment, contract.replace(/deadline_seconds:\s*\d+/, "deadline_seconds: 1"));
  return {tokenFile, store: "sqlite:" + path.join(tmp, "store.db"), example};
}

// ------------------------------------------------------------------ the browser's watchers

const problems = [];     // console errors, page errors, failed requests, error answers
let allowedStatus = null; // a window in which answers of this HTTP status are expected
const allowedSeen = {answers: 0, consoleLines: 0, lastAnswerAt: 0};  // inside that window
let quiet = false;        // the page is being closed or reloaded: aborted requests are expected

function watch(page) {
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    const text = message.text();
    if (allowedStatus !== null && text.includes(`status of ${allowedStatus}`)) {
      allowedSeen.consoleLines += 1;
      return;
    }
    const where = message.location() && message.location().url ? ` (${message.location().url})` : "";
    problems.push(`console error: ${text}${where}`);
  });
  page.on("pageerror", (error) => {
    problems.push(`page error: ${error && error.message ? error.message : String(error)}`);
  });
  page.on("requestfailed", (request) => {
    const why = request.failure() ? request.failure().errorText : "failed";
    if (quiet && why === "net::ERR_ABORTED") return;
    problems.push(`request failed: ${request.method()} ${request.url()}: ${why}`);
  });
  page.on("response", (response) => {
    const status = response.status();
    if (status === allowedStatus) {
      allowedSeen.answers += 1;
      allowedSeen.lastAnswerAt = Date.now();
    }
    if (status < 400 || status === allowedStatus) return;
    problems.push(`error answer: ${response.request().method()} ${response.url()} -> ${status}`);
  });
}

function checkNoProblems(when) {
  check(problems.length === 0, `${when}: the page had problems:\n  ${problems.join("\n  ")}`);
}

// Runs fn while answers of `status` (and their console lines) are expected; the window closes
// once every such answer has had its console line and none came for 300 ms (10 s at most), so
// that a slow machine's late line is not taken for a problem.
async function expectingStatus(status, fn) {
  allowedStatus = status;
  allowedSeen.answers = 0;
  allowedSeen.consoleLines = 0;
  allowedSeen.lastAnswerAt = Date.now();
  try {
    await fn();
    const until = Date.now() + 10_000;
    while (Date.now() < until &&
           (allowedSeen.consoleLines < allowedSeen.answers || Date.now() - allowedSeen.lastAnswerAt < 300)) {
      await sleep(50);
    }
  } finally {
    allowedStatus = null;
  }
}

// ------------------------------------------------------------------ page helpers

async function text(page, selector) {
  return page.$eval(selector, (node) => node.textContent);
}

async function data(page, selector, name) {
  return page.$eval(selector, (node, n) => node.dataset[n], name);
}

async function count(page, selector) {
  return page.$$eval(selector, (nodes) => nodes.length);
}

async function waitFor(page, selector, what, timeout = 10_000) {
  try {
    return await page.waitForSelector(selector, {timeout});
  } catch {
    let state = "";
    for (const id of ["evidence-msg", "gaps-msg", "quarantine-msg", "effects-msg", "counters-error"]) {
      const msg = await page.$eval("#" + id, (n) => (n.hidden ? "" : n.textContent)).catch(() => "");
      if (msg) state += `\n  #${id}: ${msg}`;
    }
    throw new TestFailure(`the page did not show ${what} within ${timeout} ms (${selector})${state}`);
  }
}

async function typeInto(page, selector, value) {
  await page.click(selector, {clickCount: 3});
  await page.$eval(selector, (node) => {
    node.value = "";
  });
  await page.type(selector, value);
}

async function shot(page, selector, name) {
  const file = SCREENSHOTS ? path.join(SOURCE, "docs", name) : path.join(tmp, name);
  const target = selector ? await page.$(selector) : page;
  await target.screenshot({path: file});
  console.log(`# screenshot ${file}`);
}

// ------------------------------------------------------------------ the test

async function main() {
  await fs.access(BIN, fs.constants.X_OK).catch(() => {
    throw new TestFailure(`no evident binary at ${BIN}: build it, or set EVIDENT_BIN`);
  });
  await fs.access(CHROMIUM, fs.constants.X_OK).catch(() => {
    throw new TestFailure(`no browser at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_BIN`);
  });
  const {default: puppeteer} = await import("puppeteer-core").catch((e) => {
    throw new TestFailure(`puppeteer-core is not installed (cd tests/browser && npm ci): ${e.message}`);
  });
  const {tokenFile, store, example} = await prepare();
  stock = await startStockService();
  stockUrl = `http://127.0.0.1:${stock.address().port}/reservations`;
  console.log(`# evident ${BIN}`);
  console.log(`# examples ${example}`);
  console.log(`# temporary directory ${tmp}`);
  console.log(PAGE_DIR ? `# page files from EVIDENT_PAGE_DIR=${PAGE_DIR}` : "# page: the copy compiled into the binary");
  const events = await readLines(path.join(example, "events.ndjson"));
  const v4 = await readLines(path.join(example, "events-v4.ndjson"));

  // Phase A.
  const a = await startDaemon("A", path.join(tmp, "a"), store, tokenFile);
  for (const line of v4) {
    const answer = await postEvent(a.base, line);
    check(answer.decisions[0].outcome === "contract-update-required",
          `phase A: a v4 event should be contract-update-required: ${JSON.stringify(answer)}`);
  }
  for (const line of events.filter((l) => subjectOf(l) === "order-418")) await postEvent(a.base, line);
  await until("order-418's gap to be overdue and acted on", async () => {
    const {body} = await admin(a.base, "/api/gaps");
    return body.gaps && body.gaps.some((g) => g.subject === "order-418" && g.overdue && g.record);
  });
  ok("phase A: 3 v4 events quarantined as contract-update-required, order-418's gap overdue and acted on");
  await stopDaemon(a);

  // Phase B.
  const b = await startDaemon("B", path.join(tmp, "b"), store, tokenFile);
  let brokenKept = false;
  for (const line of events.filter((l) => subjectOf(l) !== "order-418")) {
    const answer = await postEvent(b.base, line);
    if (subjectOf(line) === undefined) {
      brokenKept = answer.decisions[0].outcome === "rejected" && answer.decisions[0].reason === "malformed-json";
    }
  }
  check(brokenKept, "the broken line of events.ndjson should be rejected as malformed-json (and kept)");
  // A gap that is not due yet (the example's 300 s deadline).
  for (const version of [1, 3]) {
    const type = version === 1 ? "com.example.training.order.paid" : "com.example.training.order.cancelled";
    await postEvent(b.base, JSON.stringify({
      specversion: "1.0", id: `evt-order-421-v${version}`, source: "https://example.test/order-service", type,
      subject: "order-421", schemaversion: 1,
      data: version === 1 ? {orderId: "order-421", orderVersion: 1}
                          : {orderId: "order-421", orderVersion: 3, reason: "customer-request"},
    }));
  }
  // Markup from the outside must stay text: an unrouted type with an <img> in it.
  const markup = '<img src="/xss-probe" id="xss-probe">';
  const unrouted = await postEvent(b.base, JSON.stringify({
    specversion: "1.0", id: "evt-markup-1", source: "https://example.test/order-service", type: markup,
    subject: "order-422", data: {orderId: "order-422"},
  }));
  check(unrouted.decisions[0].outcome === "unrouted", "the markup event should be unrouted: " + JSON.stringify(unrouted));
  ok(`phase B: posted ${events.length - 2} example lines (the broken one kept as malformed-json), order-421 and a markup probe`);

  // The intents: a daemon that performs them itself (serve without --no-effects) and
  // `evident effects run` share the store; either way order-420's is done, order-422's unknown
  // (503, waits for a person), order-417's withdrawn by its compensation before any attempt, and
  // order-418's and order-421's postponed while a later version of each waits.
  const effectsOut = await runEffects(path.join(tmp, "b"), store);
  let effects = null;
  await until("the effects to settle (order-422 unknown and waiting for a person, order-420 done)", async () => {
    effects = (await admin(b.base, "/api/effects")).body.effects;
    const of = (key) => effects.find((e) => e.key === key) || {};
    return of("reserve:order-420").state === "done" && of("reserve:order-422").state === "unknown" &&
           of("reserve:order-422").waits_for_reconciliation && of("reserve:order-417").state === "withdrawn" &&
           ["reserve:order-418", "reserve:order-421"].every((key) =>
             of(key).state === "intended" && String(of(key).last_error).startsWith("postponed: "));
  }, 20_000, 200).catch((e) => {
    throw new TestFailure(`${e.message}\n  effects: ${JSON.stringify(effects)}\n  effects run: ${effectsOut}`);
  });
  ok("effects: order-420 done, order-422 unknown (503, waits for a person), order-417 withdrawn, order-418 and order-421 postponed");

  const openBefore = (await admin(b.base, "/api/quarantine?status=open")).body.records;
  const replayTarget = openBefore.find((r) => r.event_id === "evt-110");
  const discardTarget = openBefore.find((r) => r.event_id === "evt-108");
  check(replayTarget && replayTarget.reason === "unaccepted-schema-version",
        "evt-110 should be an open quarantine record (unaccepted-schema-version)");
  check(discardTarget, "evt-108 should be an open quarantine record");

  // The browser.
  browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const version = await browser.version();
  console.log(`# browser ${version}`);
  const page = await browser.newPage();
  currentPage = page;
  await page.setViewport({width: 1360, height: 900});
  watch(page);

  const response = await page.goto(b.base + "/", {waitUntil: "load"});
  check(response.status() === 200, `GET / answered ${response.status()}`);
  const csp = response.headers()["content-security-policy"] || "";
  check(csp.includes("default-src 'self'"), "GET / has no Content-Security-Policy: " + csp);
  if (!PAGE_DIR) {
    for (const name of ["index.html", "app.js", "app.css"]) {
      const served = await (await fetch(b.base + "/" + (name === "index.html" ? "" : name))).text();
      const source = await fs.readFile(path.join(SOURCE, "src", "serve", "page", name), "utf8");
      check(served === source, `the binary serves another ${name} than src/serve/page/${name}: ` +
                               "rebuild evident, or set EVIDENT_PAGE_DIR to test the files on disk");
    }
  }
  await waitFor(page, "#token-input", "the token field (is this the operator page?)");
  ok("the page renders (CSP set" + (PAGE_DIR ? "" : "; the compiled-in page is src/serve/page") + ")");

  // The last hour: five charts drawn from /metrics/history, and one that moves when events
  // arrive (the daemon reads its store every 500 ms here, every 5 s by default).
  const decisionsChart = 'figure[data-chart="decisions"]';
  await waitFor(page, `${decisionsChart} polyline.series.o-applied`, "the decisions chart's applied line");
  for (const id of ["decisions", "lag", "attention", "outbox", "outbox-age"]) {
    check(await count(page, `figure[data-chart="${id}"] svg polyline.series`) > 0, `the ${id} chart has no line`);
  }
  check(Number(await data(page, 'figure[data-chart="attention"]', "max")) >= 1,
        "the open gaps and quarantine chart should show the open records and gaps");
  const sumBefore = Number(await data(page, decisionsChart, "sum"));
  const pointsBefore = Number(await data(page, decisionsChart, "points"));
  check(sumBefore > 0, "the decisions chart should show the decisions made before the page opened");
  // Redeliveries: each is decided again (duplicate), so the chart gains a duplicate line.
  for (const line of events.filter((l) => subjectOf(l) === "order-420")) await postEvent(b.base, line);
  await until("the decisions chart to move after events are posted", async () =>
    Number(await data(page, decisionsChart, "sum")) > sumBefore &&
    Number(await data(page, decisionsChart, "points")) > pointsBefore &&
    (await count(page, `${decisionsChart} polyline.series.o-duplicate`)) === 1, 20_000, 200);
  const duplicateLine = await page.$eval(`${decisionsChart} polyline.o-duplicate`, (n) => n.getAttribute("points"));
  check(duplicateLine.split(" ").length >= 1, "the duplicate line has no points");
  ok(`the last hour: 5 charts; the decisions chart moved (${sumBefore.toFixed(2)} -> ` +
     `${Number(await data(page, decisionsChart, "sum")).toFixed(2)} decisions/s summed, a duplicate line)`);
  await shot(page, "#history", "operator-page-charts.png");

  // 1. Without a token: a clear message, no request to the admin API.
  await waitFor(page, '#gaps-msg[data-kind="need-token"]', "the need-a-token message of the gaps");
  check((await text(page, "#gaps-msg")).includes("admin token"), "the gaps should say that they need the admin token");
  check((await data(page, "#quarantine-msg", "kind")) === "need-token", "the quarantine should say that it needs the token");
  ok("without a token, the admin sections say so");
  await page.screenshot({path: path.join(tmp, "operator-page-no-token.png")});

  // A wrong token: its 401 is shown, and the token is asked for again.
  await expectingStatus(401, async () => {
    await typeInto(page, "#token-input", "not-the-token-of-this-daemon");
    await page.click("#token-save");
    await waitFor(page, '#gaps-msg[data-status="401"]', "the 401 of a wrong token");
    await waitFor(page, '#token-state[data-state="refused"]', "the refused token state");
  });
  check((await text(page, "#gaps-msg")).includes("401 unauthorized"), "the 401 should be shown with its reason: " + await text(page, "#gaps-msg"));
  ok("a wrong token: 401 unauthorized shown, token asked for again");

  await typeInto(page, "#token-input", TOKEN);
  await page.click("#token-save");
  await waitFor(page, '#token-state[data-state="set"]', "the token state 'set'");
  check(await page.evaluate(() => sessionStorage.getItem("evident.adminToken")) === TOKEN, "the token should be kept in sessionStorage");

  // 2. The evidence of order-417.
  await typeInto(page, "#subject-input", "order-417");
  await page.click("#subject-go");
  const card = '#evidence article[data-consumer="fulfillment"]';
  await waitFor(page, card, "the evidence of order-417");
  check(await page.evaluate(() => location.hash) === "#subject=order-417", "the lookup should set #subject=order-417");
  const versions = await text(page, `${card} [data-role="versions"]`);
  check(versions.includes("owner v3 · projection v3 · in sync"), "order-417's versions line: " + versions);
  const entries = await page.$$eval(`${card} li.entry`, (nodes) => nodes.map((n) => ({...n.dataset})));
  const of = (kind) => entries.filter((e) => e.kind === kind);
  check(JSON.stringify(of("applied").map((e) => e.version).sort()) === '["1","2","3"]',
        "order-417 applied v1, v2, v3: " + JSON.stringify(of("applied")));
  check(of("duplicate").length === 2, "order-417 has 2 duplicate deliveries: " + JSON.stringify(of("duplicate")));
  check(of("conflict").length === 1 && of("conflict")[0].eventId === "evt-order-417-other-v3",
        "order-417 has a same-version conflict (evt-order-417-other-v3)");
  check(of("quarantined").some((e) => e.eventId === "evt-order-417-replayed-v2"), "order-417's stale v2 is quarantined");
  check(of("effect").length === 1 && of("effect")[0].state === "withdrawn",
        "order-417's one reservation was withdrawn by its compensation: " + JSON.stringify(of("effect")));
  check(of("compensation").length === 1 && of("compensation")[0].key === "compensation:order-417:reservation:v2",
        "order-417's compensation: " + JSON.stringify(of("compensation")));
  const kinds = [...new Set(entries.map((e) => e.kind))].sort().join(", ");
  ok(`order-417: "${versions.trim()}"; ${entries.length} entries (${kinds})`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, "#evidence-panel", "operator-page-evidence.png");

  // The hash alone looks a subject up: order-418 is behind, with its deferred v4.
  await page.evaluate(() => {
    location.hash = "#subject=order-418";
  });
  await waitFor(page, '#evidence .packet[data-subject="order-418"]', "the evidence of order-418 (from the hash)");
  const behind = await text(page, `${card} [data-role="versions"]`);
  check(behind.includes("owner v4 · projection v1 · behind"), "order-418's versions line: " + behind);
  const deferred = await page.$$eval(`${card} li.entry[data-kind="deferred"]`, (n) => n.map((x) => ({...x.dataset, text: x.textContent})));
  check(deferred.length === 1 && deferred[0].version === "4" && deferred[0].overdue === "true" &&
        deferred[0].text.includes("v2"), "order-418's deferred v4 waits for v2, overdue: " + JSON.stringify(deferred));
  check(await count(page, `${card} li.entry[data-kind="effect"][data-state="intended"]`) === 1, "order-418's effect is postponed (intended)");
  check(await count(page, `${card} li.entry[data-kind="gap"][data-state="requested"]`) === 1, "order-418's gap record (requested)");
  ok(`order-418 from #subject=: "${behind.trim()}", deferred v4 (overdue, waits for v2), effect postponed, gap requested`);

  // An input refused before any consumer was chosen, still found by its subject.
  await page.evaluate(() => {
    location.hash = "#subject=order-419";
  });
  await waitFor(page, '#evidence .packet[data-subject="order-419"] article[data-consumer=""] li.entry[data-kind="quarantined"]',
                "order-419's input refused before any consumer (missing-id)");
  check((await text(page, '#evidence article[data-consumer=""]')).includes("missing-id"), "order-419's record says missing-id");
  ok("order-419: the input refused by the envelope (missing-id) is in its timeline, under no consumer");

  // 3. Gaps, quarantine, effects, counters.
  await waitFor(page, '#gaps tr[data-subject="order-418"]', "order-418's gap row");
  await waitFor(page, '#gaps tr[data-subject="order-421"]', "order-421's gap row");
  check(await data(page, '#gaps tr[data-subject="order-418"]', "overdue") === "true" &&
        await page.$eval('#gaps tr[data-subject="order-418"]', (n) => n.classList.contains("overdue")),
        "order-418's gap is highlighted overdue");
  check(await data(page, '#gaps tr[data-subject="order-421"]', "overdue") === "false", "order-421's gap is not overdue");
  ok("gaps: order-418 overdue (highlighted), order-421 due in about 5 minutes");

  await waitFor(page, "#quarantine tr.record", "the quarantine rows");
  const rows = await count(page, "#quarantine tr.record");
  check(rows === openBefore.length, `the quarantine shows ${rows} open records, the API ${openBefore.length}`);
  check(await count(page, `#quarantine tr[data-quarantine-id="${replayTarget.id}"] button[data-action="replay"]`) === 1,
        "evt-110's row has a Replay button");
  const probeRow = await page.$$eval("#quarantine tr.record", (nodes) =>
    nodes.map((n) => n.textContent).find((t) => t.includes("xss-probe")) || "");
  check(probeRow.includes('<img src="/xss-probe" id="xss-probe">'), "the markup probe is shown as text: " + probeRow);
  check(await page.$("#xss-probe") === null, "markup from the store became an element");
  ok(`quarantine: ${rows} open records with Replay/Discard; markup from the store shown as text`);

  await waitFor(page, '#effects tr[data-key="reserve:order-422"]', "the unknown effect of order-422");
  ok("effects waiting for reconciliation: reserve:order-422");

  const applied = Number(await until("the counters to show applied decisions", async () => {
    const value = await page.$eval('#counters-outcomes li[data-outcome="applied"]', (n) => n.dataset.value).catch(() => "0");
    return Number(value) > 0 ? value : null;
  }));
  const httpBefore = Number(await data(page, '#counters-http li[data-status="total"]', "value"));
  const httpAfter = Number(await until("the HTTP counter to move with the next scrape", async () => {
    const value = Number(await data(page, '#counters-http li[data-status="total"]', "value"));
    return value > httpBefore ? value : null;
  }, 7_000));
  ok(`live counters: applied ${applied}; HTTP requests ${httpBefore} -> ${httpAfter} (polling /metrics)`);

  // The token survives a reload (sessionStorage).
  quiet = true;
  await page.reload({waitUntil: "load"});
  quiet = false;
  await waitFor(page, '#token-state[data-state="set"]', "the token after a reload");
  await waitFor(page, "#quarantine tr.record", "the quarantine after a reload");
  ok("after a reload the token is still set (sessionStorage) and the admin views load");

  // 4. Replay from the page: the v4 event applies through the adapter now.
  const replayRow = `#quarantine tr[data-quarantine-id="${replayTarget.id}"]`;
  await page.click(`${replayRow} button[data-action="replay"]`);
  const form = `#quarantine form[data-action-form="replay"][data-id="${replayTarget.id}"]`;
  await waitFor(page, form, "the replay form");
  await typeInto(page, `${form} input[name="by"]`, REPLAYER);
  await typeInto(page, `${form} input[name="note"]`, "v4 is read through order-status-v4-to-v2 now");
  await page.click(`${form} button[data-confirm="replay"]`);
  await waitFor(page, `#quarantine-result[data-action="replay"][data-id="${replayTarget.id}"]:not([hidden])`, "the replay's result");
  const replayOutcome = await data(page, "#quarantine-result", "outcome");
  check(replayOutcome === "applied", "the replay's outcome on the page: " + replayOutcome + " — " + await text(page, "#quarantine-result"));
  await until("the replayed record to leave the open list", async () => (await page.$(replayRow)) === null);
  const replayed = await admin(b.base, "/api/quarantine?status=replayed");
  check(replayed.body.records.some((r) => r.id === replayTarget.id), "the API lists the record as replayed");
  const ev105 = await admin(b.base, "/api/evidence/order-105");
  const c105 = ev105.body.consumers.find((c) => c.consumer === "orders-projection");
  const rec105 = c105.kept.find((k) => k.quarantine_id === replayTarget.id);
  const audit = rec105 && rec105.audit.find((x) => x.action === "replay" && x.by === REPLAYER);
  check(audit && audit.outcome === "applied" && audit.status_after === "replayed",
        "the record's audit has the replay by " + REPLAYER + ": " + JSON.stringify(rec105));
  check(c105.applied.some((x) => x.id === "evt-110" && x.adapter === "order-status-v4-to-v2"),
        "evt-110 is applied through the adapter: " + JSON.stringify(c105.applied));
  ok(`replay from the page: record #${replayTarget.id} (evt-110) applied through the adapter; audit: replay by ${audit.by}, ${audit.outcome}, ${audit.status_after}`);
  await page.evaluate(() => document.getElementById("quarantine-panel").scrollIntoView());
  await shot(page, "#quarantine-panel", "operator-page-quarantine.png");

  // 5. Discard from the page.
  const discardRow = `#quarantine tr[data-quarantine-id="${discardTarget.id}"]`;
  await page.click(`${discardRow} button[data-action="discard"]`);
  const dform = `#quarantine form[data-action-form="discard"][data-id="${discardTarget.id}"]`;
  await waitFor(page, dform, "the discard form");
  check(await page.$eval(`${dform} input[name="by"]`, (n) => n.value) === REPLAYER, "the form remembers who acted last");
  await typeInto(page, `${dform} input[name="by"]`, DISCARDER);
  await typeInto(page, `${dform} input[name="note"]`, "the payments gateway is not an owner of orders");
  await page.click(`${dform} button[data-confirm="discard"]`);
  await waitFor(page, `#quarantine-result[data-action="discard"][data-id="${discardTarget.id}"]:not([hidden])`, "the discard's result");
  check(await data(page, "#quarantine-result", "outcome") === "discarded", "the discard's outcome on the page");
  await until("the discarded record to leave the open list", async () => (await page.$(discardRow)) === null);
  const discarded = await admin(b.base, "/api/quarantine?status=discarded");
  check(discarded.body.records.some((r) => r.id === discardTarget.id), "the API lists the record as discarded");
  const ev104 = await admin(b.base, "/api/evidence/order-104");
  const rec104 = ev104.body.consumers.flatMap((c) => c.kept).find((k) => k.quarantine_id === discardTarget.id);
  const daudit = rec104 && rec104.audit.find((x) => x.action === "discard" && x.by === DISCARDER);
  check(daudit && daudit.status_after === "discarded", "the record's audit has the discard by " + DISCARDER + ": " + JSON.stringify(rec104));
  ok(`discard from the page: record #${discardTarget.id} (evt-108) discarded; audit: discard by ${daudit.by}`);

  // The page's evidence view shows the replay's audit too.
  await page.evaluate(() => {
    location.hash = "#subject=order-105";
  });
  await waitFor(page, `#evidence li.entry[data-quarantine-id="${replayTarget.id}"] .audit li[data-by="${REPLAYER}"]`,
                "the replay's audit entry in order-105's timeline");
  ok("order-105's timeline shows the record with its replay audit entry");

  // An error is shown, with its status and reason (this 404 is expected, not a problem).
  await expectingStatus(404, async () => {
    await typeInto(page, "#subject-input", "no-such-order");
    await page.click("#subject-go");
    await waitFor(page, '#evidence-msg[data-status="404"][data-reason="unknown-subject"]', "the 404 of an unknown subject");
  });
  ok("an unknown subject: " + (await text(page, "#evidence-msg")).trim());

  // 6. No console errors, no failed requests, during the whole run.
  await sleep(500);
  await page.screenshot({path: path.join(tmp, "operator-page-full.png"), fullPage: true});
  check(await page.$eval("#page-error", (n) => n.hidden), "the page reports an unexpected error: " + await text(page, "#page-error"));
  checkNoProblems("at the end");
  ok("no console errors, page errors, failed requests or unexpected error answers");

  quiet = true;
  await browser.close();
  browser = null;
  await stopDaemon(b);
}

// ------------------------------------------------------------------ run

async function cleanup() {
  if (failed && currentPage && browser) {
    const file = path.join(tmp, "failure.png");
    await currentPage.screenshot({path: file, fullPage: true}).then(() => console.error(`# page at the failure: ${file}`), () => {});
  }
  if (browser) {
    quiet = true;
    await browser.close().catch(() => {});
    browser = null;
  }
  for (const child of children) child.kill("SIGKILL");
  if (stock) {
    stock.closeAllConnections();
    stock.close();
    stock = null;
  }
  if (tmp && !failed && !KEEP_TMP) await fs.rm(tmp, {recursive: true, force: true});
  else if (tmp) console.error(`# kept ${tmp}`);
}

const timer = setTimeout(() => {
  failed = true;
  console.error(`FAIL: the test took longer than ${TIME_LIMIT_MS / 1000} s`);
  for (const child of children) child.kill("SIGKILL");
  process.exit(1);
}, TIME_LIMIT_MS);

const started = Date.now();
try {
  await main();
  console.log(`PASS operator page (${((Date.now() - started) / 1000).toFixed(1)} s)`);
} catch (error) {
  failed = true;
  console.error("FAIL: " + (error instanceof TestFailure ? error.message : error && error.stack ? error.stack : String(error)));
  if (problems.length) console.error("  problems seen by the page:\n  " + problems.join("\n  "));
  process.exitCode = 1;
} finally {
  await cleanup();
  clearTimeout(timer);
}
