// The progress bar of `evident consume --progress always`, as a terminal shows it: runs the
// real command over 100,000 generated events of examples/orders, takes the frame its bar drew
// nearest 60%, checks its shape (bar, percentage, events, rate, time left) and renders it as a
// terminal line in Chromium for docs/consume.md (EVIDENT_SCREENSHOTS=1 writes
// docs/progress-bar.png; otherwise the picture goes to a temporary directory).
//
//   EVIDENT_BIN=build/src/cli/evident node progress_screenshot.mjs
import {spawnSync} from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {fileURLToPath} from "node:url";
import puppeteer from "puppeteer-core";

const SOURCE = process.env.EVIDENT_SOURCE_DIR ||
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const BIN = process.env.EVIDENT_BIN || path.join(SOURCE, "build", "src", "cli", "evident");
const SCREENSHOTS = process.env.EVIDENT_SCREENSHOTS === "1";

function fail(message) {
  console.error("FAIL progress bar: " + message);
  process.exit(1);
}

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "evident-progress-"));
try {
  const lines = [];
  for (let i = 0; i < 100000; i++) {
    const order = "order-" + (i % 5000);
    lines.push(JSON.stringify({
      specversion: "1.0", id: "evt-" + i, source: "training://orders/checkout",
      type: "order.status.changed", subject: order,
      data: {schemaVersion: 2, orderId: order, status: i % 2 ? "paid" : "created", paymentReference: "p-" + i},
    }));
  }
  await fs.writeFile(path.join(tmp, "events.ndjson"), lines.join("\n") + "\n");
  const args = ["consume", "--config", path.join(SOURCE, "examples", "orders", "evident.yaml"),
                "--store", "sqlite:" + path.join(tmp, "orders.db"), "--input", "events.ndjson",
                "--progress", "always"];
  const run = spawnSync(BIN, args, {cwd: tmp, encoding: "utf8", timeout: 120_000});
  if (run.status !== 0) fail(`evident consume exited ${run.status}: ${run.stderr.slice(-500)}`);
  const frames = run.stderr.split("\r").map((f) => f.trim()).filter((f) => /^\[[#-]+\]/.test(f));
  if (frames.length < 2) fail("no progress frames in: " + JSON.stringify(run.stderr.slice(0, 300)));
  const percent = (f) => Number((/\]\s+(\d+)%/.exec(f) || [])[1]);
  const frame = frames.reduce((best, f) => (Math.abs(percent(f) - 60) < Math.abs(percent(best) - 60) ? f : best));
  if (!/^\[#+-*\]\s+\d+%\s+\d+ events\s+\d+\/s\s+\d+:\d\d left/.test(frame)) fail("unexpected frame: " + frame);
  console.log("# frame: " + frame);

  const browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({width: 900, height: 120});
    const command = "$ evident consume --config examples/orders/evident.yaml --store sqlite:orders.db --input events.ndjson";
    const html = `<!doctype html><meta charset="utf-8"><body style="margin:0;background:#1e1e1e">
      <pre id="t" style="margin:0;padding:12px 16px;color:#d4d4d4;font:14px/1.5 'DejaVu Sans Mono',monospace;
      display:inline-block"></pre></body>`;
    await page.setContent(html);
    await page.$eval("#t", (node, text) => { node.textContent = text; }, command + "\n" + frame);
    const file = SCREENSHOTS ? path.join(SOURCE, "docs", "progress-bar.png") : path.join(tmp, "progress-bar.png");
    await (await page.$("#t")).screenshot({path: file});
    console.log("# screenshot " + file);
  } finally {
    await browser.close();
  }
  console.log("PASS progress bar");
} finally {
  await fs.rm(tmp, {recursive: true, force: true});
}
