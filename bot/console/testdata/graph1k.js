// Opens the graph page of a 1,000-entity campaign in headless Chromium and
// reports how the tab fared while the layout ran: the longest gap between
// animation frames, the longest main-thread task (Long Tasks API), how many
// frames the layout spread over, and whether picking an entity during the
// layout worked. Driven by e2e_test.go; prints one JSON line.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "glyphoxa-chromium-"));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: cfg.chromium, headless: true, viewport: { width: 1280, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run"],
    timeout: 0, // no budget: e2e_test.go's hang guard ends a stuck browser
  });
  const page = ctx.pages()[0] || await ctx.newPage();
  page.setDefaultTimeout(0); // waits on events; e2e_test.go holds the hang guard
  await page.goto(cfg.base + cfg.link);
  await page.addInitScript(() => {
    window.__probe = { maxGap: 0, frames: 0, longest: 0, tasks: [] };
    let last = 0;
    const tick = (t) => { if (last) window.__probe.maxGap = Math.max(window.__probe.maxGap, t - last); last = t; window.__probe.frames++; requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    try {
      new PerformanceObserver((l) => l.getEntries().forEach((e) => { window.__probe.longest = Math.max(window.__probe.longest, e.duration); window.__probe.tasks.push([Math.round(e.startTime), Math.round(e.duration)]); }))
        .observe({ type: "longtask", buffered: true });
    } catch (e) { /* no Long Tasks API */ }
  });
  // The default view of a large campaign: the graph around its
  // best-connected entity.
  await page.goto(cfg.base + "/graph");
  await page.waitForFunction(() => window.glyphoxaGraph && window.glyphoxaGraph.firstDraw() > 0);
  const local = await page.evaluate(() => ({ nodes: window.glyphoxaGraph.nodes(), focus: window.glyphoxaGraph.focus(),
    firstDraw: window.glyphoxaGraph.firstDraw(), fetched: window.glyphoxaGraph.fetched(), fetched: window.glyphoxaGraph.fetched(), url: location.href }));
  await page.screenshot({ path: path.join(cfg.shots, "graph-1k-local.png") });
  // The search finds an entity the local view does not show (the server
  // looks it up) and moves the view around it.
  local.showed = await page.evaluate((id) => window.glyphoxaGraph.shows(id), cfg.findID);
  await page.getByLabel("Find an entity").fill(cfg.find);
  await page.getByLabel("Find an entity").press("Enter");
  await page.waitForFunction((name) => { const h = document.querySelector("#entity h2"); return h && h.textContent.startsWith(name); }, cfg.find);
  local.found = await page.evaluate((id) => ({ focus: window.glyphoxaGraph.focus(), shows: window.glyphoxaGraph.shows(id) }), cfg.findID);
  // The whole graph.
  await page.goto(cfg.base + "/graph?depth=all");
  await page.waitForFunction(() => window.glyphoxaGraph && window.glyphoxaGraph.nodes() > 0);
  // Pick an entity while the layout is still running.
  const during = await page.evaluate(() => !window.glyphoxaGraph.settled());
  await page.getByLabel("Find an entity").fill(cfg.find);
  await page.getByLabel("Find an entity").press("Enter");
  await page.waitForSelector("#entity h2");
  const picked = await page.locator("#entity h2").innerText();
  await page.waitForFunction(() => window.glyphoxaGraph.settled());
  const probe = await page.evaluate(() => Object.assign({ nodes: window.glyphoxaGraph.nodes(), ticks: window.glyphoxaGraph.ticks(),
    firstDraw: window.glyphoxaGraph.firstDraw(), fetched: window.glyphoxaGraph.fetched(),
    status: document.getElementById("graph-status").textContent }, window.__probe));
  await page.screenshot({ path: path.join(cfg.shots, "graph-1k.png") });
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(Object.assign(probe, { during, picked, local })) + "\n");
})().catch((e) => { process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + "\n"); process.exit(1); });
