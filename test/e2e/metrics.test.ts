// What the log explorer costs (issue 13), measured in Chromium against a running Berth:
// - the JavaScript and CSS the page actually loaded, gzipped here (zlib level 9) from the responses' bodies, and
//   every script the build made (chunks loaded on demand included);
// - the time to first render of 1,000 rows: from the end of the log query's response (Resource Timing) to the moment
//   the table's data holds 1,000 rows (a MutationObserver installed before the page's script), and from navigation
//   start (a returning user: the token is already in sessionStorage).
// Printed, and written to test-results/explorer-metrics.json.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/app.js';
import { builtUiDir, launchBrowser, type OpenedPage, openPage, resultPath, signIn } from './support/browser.js';
import { type Seeded, seed, startE2eApp, TOKENS } from './support/world.js';

const QUERY = '/cloud/logs/logs-insights';
/** One source with 1,800 rows in the window: its first page is exactly 1,000 rows. */
const VIEW = '/ui/logs?org=org-a&sources=mi-web%3A%3Aapp&range=15m';
const RUNS = 5;

// Before the page's script, in every document: the first moment the table's data holds 1,000 rows (every rendered
// row carries the row count as aria-setsize).
const WATCH_ROWS = `
window.__e2eRows = undefined;
const observer = new MutationObserver(() => {
  if (window.__e2eRows !== undefined) return;
  const row = document.querySelector('[data-testid="rows"] [aria-setsize]');
  if (row && Number(row.getAttribute('aria-setsize')) >= 1000) {
    window.__e2eRows = { at: performance.now(), count: Number(row.getAttribute('aria-setsize')) };
    observer.disconnect();
  }
});
observer.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-setsize'] });
`;

interface Asset {
  url: string;
  type: 'script' | 'stylesheet';
  bytes: number;
  gzipBytes: number;
}

let t: TestApp;
let browser: Browser;
let seeded: Seeded;
let opened: OpenedPage;

beforeAll(async () => {
  [t, browser] = await Promise.all([startE2eApp(), launchBrowser()]);
  seeded = await seed(t);
});
afterAll(async () => {
  await opened?.context.close();
  await browser?.close();
  await t?.close();
});

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

describe.sequential('the log explorer’s cost', () => {
  it('measures the gzipped JavaScript and CSS, and the time to first render of 1,000 rows', async () => {
    expect(seeded.webRows).toBeGreaterThan(1_000);
    opened = await openPage(browser, t.url);
    const { page, context, problems } = opened;
    await context.addInitScript({ content: WATCH_ROWS });
    const assets: Promise<Asset | undefined>[] = [];
    page.on('response', (r: Response) => {
      const type = r.request().resourceType();
      if (type !== 'script' && type !== 'stylesheet') return;
      assets.push(
        r.body().then((body) => ({
          url: new URL(r.url()).pathname,
          type,
          bytes: body.length,
          gzipBytes: gzipSync(body, { level: 9 }).length,
        })),
      );
    });

    // First visit: sign in by pasting the token; every asset the page loads for a query is loaded by then.
    await page.goto(VIEW);
    await signIn(page, TOKENS.viewer);
    await expect.poll(() => page.getByTestId('summary').textContent(), { timeout: 15_000 }).toBe('1,000 rows');
    const loaded = (await Promise.all(assets)).filter((a) => a !== undefined);
    const unique = [...new Map(loaded.map((a) => [a.url, a])).values()];
    const sum = (type: Asset['type'], key: 'bytes' | 'gzipBytes') =>
      unique.filter((a) => a.type === type).reduce((n, a) => n + a[key], 0);
    expect(unique.some((a) => a.type === 'script')).toBe(true);
    expect(unique.some((a) => a.type === 'stylesheet')).toBe(true);

    // Returning visits (token in sessionStorage): navigation → query answered → 1,000 rows in the table.
    const fromResponse: number[] = [];
    const fromNavigation: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      await page.goto(VIEW);
      await page.waitForFunction(() => (window as unknown as { __e2eRows?: unknown }).__e2eRows !== undefined, null, {
        timeout: 15_000,
      });
      const m = await page.evaluate((path) => {
        const rows = (window as unknown as { __e2eRows: { at: number; count: number } }).__e2eRows;
        const queries = performance
          .getEntriesByType('resource')
          .filter((e) => new URL(e.name).pathname === path) as PerformanceResourceTiming[];
        return { rows, responseEnds: queries.map((q) => q.responseEnd) };
      }, QUERY);
      expect(m.rows.count).toBe(1_000);
      // The answer rendered is the last one that ended before the rows appeared (there is one per visit).
      const ends = m.responseEnds.filter((e) => e <= m.rows.at);
      expect(ends).toHaveLength(1);
      fromResponse.push(m.rows.at - ends[0]!);
      fromNavigation.push(m.rows.at);
    }
    expect(problems.all()).toEqual([]);

    // Every script the build made, the chunks loaded only on demand (the regex engine, the live tail's filter split)
    // among them.
    const assetsDir = join(await builtUiDir(), 'assets');
    const built = readdirSync(assetsDir)
      .filter((name) => name.endsWith('.js'))
      .map((name) => readFileSync(join(assetsDir, name)));
    const allScripts = {
      files: built.length,
      bytes: built.reduce((n, b) => n + b.length, 0),
      gzipBytes: built.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0),
    };
    expect(allScripts.gzipBytes).toBeGreaterThanOrEqual(sum('script', 'gzipBytes'));
    // The page's budget: the JavaScript loaded at start stays under 60 KiB gzipped (on-demand chunks apart).
    expect(sum('script', 'gzipBytes')).toBeLessThan(60 * 1024);

    const metrics = {
      measuredAt: new Date().toISOString(),
      browser: `Chromium ${browser.version()}`,
      database: process.env.TEST_DATABASE_URL ? 'postgresql' : 'pglite',
      javascript: { bytes: sum('script', 'bytes'), gzipBytes: sum('script', 'gzipBytes') },
      css: { bytes: sum('stylesheet', 'bytes'), gzipBytes: sum('stylesheet', 'gzipBytes') },
      allScripts,
      assets: unique,
      firstRender1000Rows: {
        runs: RUNS,
        fromQueryResponseEndMs: { median: round(median(fromResponse)), all: fromResponse.map(round) },
        fromNavigationStartMs: { median: round(median(fromNavigation)), all: fromNavigation.map(round) },
      },
    };
    writeFileSync(resultPath('explorer-metrics.json'), `${JSON.stringify(metrics, null, 2)}\n`);
    console.log(
      [
        `log explorer (${metrics.browser}, ${metrics.database}):`,
        `  JavaScript ${(metrics.javascript.gzipBytes / 1024).toFixed(1)} KiB gzipped (${(metrics.javascript.bytes / 1024).toFixed(1)} KiB raw)`,
        `  every script built, on-demand chunks included: ${allScripts.files} files, ${(allScripts.gzipBytes / 1024).toFixed(1)} KiB gzipped`,
        `  CSS ${(metrics.css.gzipBytes / 1024).toFixed(1)} KiB gzipped (${(metrics.css.bytes / 1024).toFixed(1)} KiB raw)`,
        `  1,000 rows rendered ${metrics.firstRender1000Rows.fromQueryResponseEndMs.median} ms after the query's answer ended, ` +
          `${metrics.firstRender1000Rows.fromNavigationStartMs.median} ms after navigation start (median of ${RUNS})`,
      ].join('\n'),
    );
    // Sanity bounds, not targets: a measurement that cannot be right fails.
    for (const x of [...fromResponse, ...fromNavigation]) expect(x).toBeGreaterThan(0);
    expect(median(fromResponse)).toBeLessThan(median(fromNavigation));
  });
});
