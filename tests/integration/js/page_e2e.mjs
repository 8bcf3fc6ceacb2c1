// page_e2e.mjs URL: cohortd's live page (/ui) in headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core: no browser download).
// Reads one JSON command a line on stdin, answers one JSON line on stdout:
//   {"markers": N, "members": M}  wait (without reloading: the page updates
//                                 from its event stream) until the timeline
//                                 shows N rebalance markers, the last one
//                                 ended Stable, the group Stable with M
//                                 member rows, then report what it shows
//   {"shot": PATH}                save a full-page screenshot
// test_page.py drives it.
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const url = process.argv[2];
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  // root in a container: no sandbox; no GPU on the machine
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));
await page.goto(url);

function seen() {
  const q = (s, root = document) => [...root.querySelectorAll(s)];
  return {
    loads: performance.getEntriesByType("navigation").length,
    rendered: Number(document.body.dataset.rendered || 0),
    groups: q("#groups li[data-group]").map((li) => ({
      group: li.dataset.group, state: li.querySelector(".state").textContent })),
    state: document.getElementById("group-state")?.textContent ?? null,
    members: q("#members tr[data-member]").map((r) => r.dataset.member),
    grid: q("#grid .cell").map((c) => ({
      partition: c.dataset.partition, owner: c.dataset.owner, lag: c.querySelector(".lag").textContent })),
    markers: q("#timeline .marker").map((g) => ({
      generations: g.dataset.generations, cause: g.dataset.cause, barrier: g.dataset.barrier,
      outcome: g.dataset.outcome,
      text: g.querySelector("text").textContent })),
    barriers: q("#timeline text.barrier").map((t) => t.textContent),
    whatif: q("#whatif tr[data-strategy]").map((r) => q("td", r).map((td) => td.textContent)),
    lanes: q("#timeline .lane").map((g) => ({
      member: g.dataset.member, label: g.querySelector("text").textContent,
      owned: q(".owned", g).map((r) => Number(r.dataset.partitions)),
      pauses: q(".pause", g).map((r) => ({ generation: r.dataset.generation, why: r.dataset.why })) })),
  };
}

for await (const line of createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line);
  let out = {};
  try {
    if (cmd.shot) {
      await page.screenshot({ path: cmd.shot, fullPage: true });
    } else {
      // what the test waited for on the API: the group Stable, its last
      // rebalance closed
      await page.waitForFunction(([n, m]) => {
        const marks = document.querySelectorAll("#timeline .marker");
        return marks.length >= n && marks[marks.length - 1].dataset.outcome === "Stable" &&
          document.getElementById("group-state")?.textContent === "Stable" &&
          document.querySelectorAll("#members tr[data-member]").length === m &&
          document.querySelectorAll("#whatif tr[data-strategy]").length === 4;
      }, [cmd.markers, cmd.members], { timeout: 60000, polling: 100 });
      out = await page.evaluate(seen);
    }
  } catch (e) {
    out = { error: String(e), now: await page.evaluate(seen) };
  }
  out.page_errors = errors;
  process.stdout.write(JSON.stringify(out) + "\n");
}
await browser.close();
