// Browser end-to-end test of the DM console, driven by e2e_test.go: a real
// headless Chromium (Debian's) through playwright-core. It signs in through
// the fake Discord's OAuth pages as the DM, confirms a pending fact, edits a
// persona, opens the graph, follows a recap sentence to its line, then signs
// in as a player and saves every HTML and JSON answer the player's browser
// received, for the Go test to search for secrets. It prints one JSON line
// of observations; the Go test asserts on them and on the database.
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = { steps: [] };
const step = (name, data) => { out.steps.push(Object.assign({ name }, data || {})); };

// launch starts the one Chromium both the DM and the player use, each in
// a context of its own (cookies and storage apart, like two browsers):
// starting Chromium twice cost seconds of CPU.
async function launch() {
  return chromium.launch({
    executablePath: cfg.chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run"],
    timeout: 0, // no budget: e2e_test.go's hang guard ends a stuck browser
  });
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(cfg.shots, name + ".png"), fullPage: true });
}

// overflow reports whether the page is wider than the viewport.
async function overflow(page) {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

(async () => {
  const browser = await launch();
  const dm = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await dm.newPage();
  page.setDefaultTimeout(0); // waits on events; e2e_test.go holds the hang guard
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

  // Sign in through Discord's (fake) OAuth pages.
  await page.goto(cfg.base + "/signin");
  await shot(page, "signin");
  await page.getByRole("link", { name: /Sign in with Discord/ }).click();
  await page.waitForURL(/\/review$/);
  step("signin", { url: new URL(page.url()).pathname, who: await page.locator(".who span").innerText() });
  await shot(page, "review");

  // Keyboard: the review buttons are reachable with Tab.
  let tabs = 0, focused = "";
  for (; tabs < 60; tabs++) {
    await page.keyboard.press("Tab");
    focused = await page.evaluate(() => document.activeElement && document.activeElement.textContent.trim());
    if (focused.startsWith("Confirm #")) break;
  }
  step("keyboard", { tabs, focused });
  // Confirm the pending fact with the keyboard.
  await page.keyboard.press("Enter");
  await page.waitForSelector("#message");
  step("confirm", { message: await page.locator("#message").innerText() });
  await shot(page, "review-after-confirm");

  // Bulk review: tick every pending fact, confirm them in one batch, undo.
  const boxes = page.locator('input[name="fact"]');
  const ticked = await boxes.count();
  for (let i = 0; i < ticked; i++) await boxes.nth(i).check();
  await page.getByRole("button", { name: "Confirm selected" }).click();
  await page.waitForSelector("#undo-banner");
  const bulkMessage = await page.locator("#message").innerText();
  await shot(page, "review-bulk");
  await page.locator("#undo-banner button").click();
  await page.waitForFunction(() => /Undid batch/.test((document.getElementById("message") || {}).textContent || ""));
  step("bulk", { facts: ticked, message: bulkMessage, text: await page.locator("#message").innerText(),
    shown: await page.locator("#undo-banner").count() > 0 });

  // Name suggestions: typing in an edit form's name field fills its
  // datalist from /api/names.
  const names = () => page.locator("#entity-names option").evaluateAll((os) => os.map((o) => o.value));
  const before = await names();
  await page.locator("article.fact details summary").first().click();
  await page.locator('input[name="subject"]').first().fill("whisp");
  await page.waitForFunction(() => Array.from(document.querySelectorAll("#entity-names option")).some((o) => o.value === "Tower of Whispers"));
  step("suggest", { before, options: await names() });
  // The merge field of an entity's page suggests ids, never the entity itself.
  await page.goto(cfg.base + "/entities/grimjaw");
  await page.locator('input[name="into"]').fill("mo");
  await page.waitForFunction(() => Array.from(document.querySelectorAll("#entity-names option")).some((o) => o.value === "elara"));
  step("merge-suggest", { options: await names() });

  // Edit a persona.
  await page.goto(cfg.base + "/npc/grimjaw");
  await page.getByLabel("Personality").fill(cfg.personality);
  await page.getByRole("button", { name: "Save persona" }).click();
  await page.waitForSelector("#message");
  step("persona", { message: await page.locator("#message").innerText(),
    field: await page.getByLabel("Personality").inputValue() });
  await page.getByLabel("Question").fill("who took the steel?");
  await page.getByRole("button", { name: "Ask" }).click();
  await page.waitForSelector("#answers");
  step("ask", { answers: await page.locator("#answers li").count() });
  await shot(page, "npc");

  // The graph: wait for the layout to settle, then open an entity.
  await page.goto(cfg.base + "/graph");
  await page.waitForFunction(() => /entities/.test(document.getElementById("graph-status").textContent));
  await page.waitForFunction(() => window.glyphoxaGraph && window.glyphoxaGraph.settled());
  await page.getByLabel("Find an entity").fill("Grim");
  await page.getByLabel("Find an entity").press("Enter");
  await page.waitForSelector("#entity h2");
  step("graph", { status: await page.locator("#graph-status").innerText(), entity: await page.locator("#entity h2").innerText(),
    facts: await page.locator("#entity .facts li").count(), secretTags: await page.locator("#entity .tag.secret").count() });
  await shot(page, "graph");
  // Search by alias; the legend names the types in view.
  await page.getByLabel("Find an entity").fill("the blacksmith");
  await page.getByLabel("Find an entity").press("Enter");
  await page.waitForFunction(() => { const h = document.querySelector("#entity h2"); return h && h.textContent.startsWith("Grimjaw"); });
  const aliasHit = await page.locator("#entity-list button").first().innerText();
  const legend = await page.locator("#graph-types").innerText();
  // An entity's own page: the graph around it, its panel open, the view in the URL.
  await page.goto(cfg.base + "/graph/brannoc");
  await page.waitForFunction(() => /within 2 steps of Brannoc/.test(document.getElementById("graph-status").textContent));
  await page.waitForFunction(() => { const h = document.querySelector("#entity h2"); return h && h.textContent.startsWith("Brannoc"); });
  await page.selectOption("select[name=depth]", "1");
  await page.getByRole("button", { name: "Show" }).click();
  await page.waitForFunction(() => /within 1 step of Brannoc/.test(document.getElementById("graph-status").textContent));
  step("graph-local", { aliasHit, legend, status: await page.locator("#graph-status").innerText(), url: page.url(),
    nodes: await page.evaluate(() => window.glyphoxaGraph.nodes()) });

  // Follow a recap sentence to the line it cites.
  await page.goto(cfg.base + "/sessions/s1");
  const cite = page.locator("a.cite").nth(2);
  const line = await cite.getAttribute("data-line");
  await cite.click();
  await page.waitForFunction((id) => location.hash === "#line-" + id, line);
  await page.waitForFunction((id) => document.activeElement && document.activeElement.id === "line-" + id, line);
  step("recap", { line, hash: await page.evaluate(() => location.hash),
    target: await page.evaluate((id) => document.getElementById("line-" + id).classList.contains("target"), line),
    visible: await page.locator("#line-" + line).isVisible(),
    text: await page.locator("#line-" + line + " .text").innerText() });
  await page.getByLabel("Show what speech-to-text heard").check();
  step("raw", { shown: await page.locator(".timeline .raw").first().isVisible() });
  await shot(page, "session");

  await page.goto(cfg.base + "/live");
  await shot(page, "live");

  // Narrow screens: every page at 360 px, without sideways scrolling.
  await page.setViewportSize({ width: 360, height: 740 });
  const narrow = {};
  for (const [name, p] of [["review", "/review"], ["graph", "/graph"], ["npc", "/npc/grimjaw"], ["session", "/sessions/s1"], ["live", "/live"], ["asof", "/asof?entity=grimjaw&as_of=s1"]]) {
    await page.goto(cfg.base + p);
    if (name === "graph") await page.waitForFunction(() => /entities/.test(document.getElementById("graph-status").textContent));
    narrow[name] = await overflow(page);
    await shot(page, name + "-360");
  }
  step("narrow", { overflow: narrow });
  step("errors", { dm: errors.slice() });
  await dm.close();

  // A player: save everything the browser receives.
  const pl = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const pp = await pl.newPage();
  pp.setDefaultTimeout(0);
  let n = 0;
  const saves = [];
  pp.on("response", (r) => {
    const type = r.headers()["content-type"] || "";
    if (!r.url().startsWith(cfg.base) || !(type.includes("json") || type.includes("html"))) return;
    saves.push(r.body().then((b) => fs.writeFileSync(path.join(cfg.dump, (n++) + ".txt"), r.url() + "\n" + b)).catch(() => {}));
  });
  await pp.goto(cfg.base + "/signin");
  await pp.getByRole("link", { name: /Sign in with Discord/ }).click();
  await pp.waitForURL(/\/graph$/);
  await pp.waitForFunction(() => /entities/.test(document.getElementById("graph-status").textContent));
  const buttons = await pp.locator("#entity-list button").count();
  for (let i = 0; i < buttons; i++) {
    const b = pp.locator("#entity-list button").nth(i);
    const label = (await b.innerText()).split(" (")[0];
    await b.click();
    await pp.waitForFunction((l) => { const h = document.querySelector("#entity h2"); return h && h.textContent.startsWith(l); }, label);
    fs.writeFileSync(path.join(cfg.dump, "dom-graph-" + i + ".txt"), await pp.content());
  }
  await shot(pp, "player-graph");
  for (const s of ["s1", "s2"]) {
    await pp.goto(cfg.base + "/sessions/" + s);
    fs.writeFileSync(path.join(cfg.dump, "dom-" + s + ".txt"), await pp.content());
  }
  await shot(pp, "player-session");
  await pp.goto(cfg.base + "/review");
  step("player", { entities: buttons, review: await pp.locator("h1").innerText() });
  await Promise.all(saves);
  await pl.close();
  await browser.close();
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { process.stdout.write(JSON.stringify(Object.assign(out, { error: String(e && e.stack || e) })) + "\n"); process.exit(1); });
