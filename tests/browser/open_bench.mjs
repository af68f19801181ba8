// Opening a session in the web UI in a real Chromium: the time from
// navigation to the timeline drawn from the server's answer, and the bytes
// the page fetched from the API, for each session named; then one wheel
// zoom's time to the redrawn window. Run by crates/strobe-cli/benches/ui_open.rs.
//
// Args: URL (from `strobe ui`), RUNS, then session ids. Prints one JSON
// object per measurement.
import { createRequire } from 'node:module';
import path from 'node:path';
import os from 'node:os';

const modules =
  process.env.STROBE_TEST_NODE_MODULES ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'strobe/test-tools/node/node_modules');
const { chromium } = createRequire(path.join(modules, 'noop.js'))('playwright-core');

const [urlArg, runsArg, ...sessions] = process.argv.slice(2);
const url = new URL(urlArg);
const token = url.searchParams.get('token');
const runs = Number(runsArg);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  for (let run = 0; run < runs; run++) {
    for (const id of sessions) {
      const page = await context.newPage();
      let apiBytes = 0;
      let timelineBytes = 0;
      page.on('response', async (r) => {
        if (!r.url().includes('/api/')) return;
        const body = await r.body().catch(() => Buffer.alloc(0));
        apiBytes += body.length;
        if (r.url().includes('/timeline')) timelineBytes += body.length;
      });
      const t0 = performance.now();
      await page.goto(`${url.origin}/?token=${token}#/session/${encodeURIComponent(id)}`);
      await page.locator('[data-testid=timeline][data-ready=true]').waitFor({ timeout: 60000 });
      const openMs = performance.now() - t0;
      const t = page.locator('[data-testid=timeline]');
      const window0 = `${await t.getAttribute('data-from-ns')}-${await t.getAttribute('data-to-ns')}`;
      const box = await page.locator('[data-testid=timeline] canvas').first().boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      const t1 = performance.now();
      await page.mouse.wheel(0, -300);
      await page.waitForFunction(
        (w) => {
          const el = document.querySelector('[data-testid=timeline]');
          return `${el.getAttribute('data-from-ns')}-${el.getAttribute('data-to-ns')}` !== w;
        },
        window0,
        { timeout: 60000 },
      );
      const zoomMs = performance.now() - t1;
      await page.waitForTimeout(200);
      console.log(JSON.stringify({ session: id, run, openMs, zoomMs, apiBytes, timelineBytes }));
      await page.close();
    }
  }
} finally {
  await browser.close();
}
