// The log explorer's redesign (toolbar, histogram axes, level facet, states, live tail of what the user means), end to
// end in Chromium, each at 1280×800 and at 390×844 with a screenshot under test-results/. Every test ends with no
// console error (but those it causes on purpose), no uncaught exception, no CSP violation, no dialog and no token in
// any URL.
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/app.js';
import {
  closeChecked,
  DESKTOP,
  horizontalOverflow,
  launchBrowser,
  MOBILE,
  type OpenedPage,
  openPage,
  readAllRows,
  resultPath,
  rowsScroller,
  signIn,
} from './support/browser.js';
import { GROUPS, ingest, type Seeded, seed, startE2eApp, TOKENS } from './support/world.js';

const QUERY = '/cloud/logs/logs-insights';
const HISTOGRAM = '/cloud/logs/logs-insights/histogram';
const SECRETS = Object.values(TOKENS).map((token) => token.split('_').at(-1)!);

const VIEWPORTS: [string, BrowserContextOptions][] = [
  ['desktop', { viewport: DESKTOP }],
  ['mobile', { viewport: MOBILE, isMobile: true, hasTouch: true, deviceScaleFactor: 2 }],
];

let t: TestApp;
let browser: Browser;
let seeded: Seeded;
let opened: OpenedPage | undefined;

beforeAll(async () => {
  [t, browser] = await Promise.all([startE2eApp(), launchBrowser()]);
  seeded = await seed(t);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});
afterEach(async () => {
  await closePage();
});

async function closePage(): Promise<void> {
  const done = opened;
  opened = undefined;
  if (done) await closeChecked(done, SECRETS);
}

type Bucket = { startMs: number; endMs: number; counts: Record<string, number> };

/** The answer to the view's own query or histogram (not the one-bucket counts that pick the first view). */
function answerTo(page: Page, path: string) {
  return page.waitForResponse(
    (r) =>
      new URL(r.url()).pathname === path &&
      r.request().method() === 'POST' &&
      (r.request().postDataJSON() as { buckets?: number }).buckets !== 1,
    { timeout: 15_000 },
  );
}

/** Opens the explorer signed in as the viewer at `options`' viewport; answers the first histogram's buckets. */
async function explorer(options: BrowserContextOptions, path = '/ui/logs'): Promise<{ page: Page; buckets: Bucket[] }> {
  opened = await openPage(browser, t.url, options);
  const { page } = opened;
  await page.goto(path);
  const histogram = answerTo(page, HISTOGRAM);
  const query = answerTo(page, QUERY);
  await signIn(page, TOKENS.viewer);
  const [h] = await Promise.all([histogram, query]);
  await settled(page);
  return { page, buckets: (await h.json()).buckets };
}

async function settled(page: Page): Promise<number> {
  const summary = page.getByTestId('summary');
  await expect.poll(() => summary.textContent(), { timeout: 15_000 }).toMatch(/^[\d,]+ rows?$/);
  return Number((await summary.textContent())!.replace(/\D/g, ''));
}

async function runFilter(page: Page, line: string): Promise<{ body: any; buckets: Bucket[] }> {
  const histogram = answerTo(page, HISTOGRAM);
  const query = answerTo(page, QUERY);
  const box = page.getByRole('searchbox', { name: 'Filter' });
  await box.fill(line);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const [h, q] = await Promise.all([histogram, query]);
  return { body: q.request().postDataJSON(), buckets: (await h.json()).buckets };
}

const shot = (page: Page, name: string, viewport: string) =>
  page.screenshot({ path: resultPath(`explorer-${name}-${viewport}.png`), fullPage: viewport === 'mobile' });

async function noOverflow(page: Page, viewport: string): Promise<void> {
  const o = await horizontalOverflow(page);
  expect(o.scrollWidth, `${viewport}: ${o.widest.join(', ')}`).toBeLessThanOrEqual(o.clientWidth);
}

const levelTotals = (buckets: Bucket[]) => {
  const out: Record<string, number> = {};
  for (const b of buckets) for (const [l, c] of Object.entries(b.counts)) out[l] = (out[l] ?? 0) + c;
  return out;
};

/** The facet's counts as shown: level → count. Opened first on a phone, where it folds above the rows. */
async function facetCounts(page: Page): Promise<Record<string, number>> {
  const toggle = page.getByRole('button', { name: /^Levels/ });
  if ((await toggle.isVisible()) && (await toggle.getAttribute('aria-expanded')) === 'false') await toggle.click();
  const items = page.getByTestId('level-facet').getByRole('button');
  await items.first().waitFor();
  const out: Record<string, number> = {};
  for (const item of await items.all()) {
    out[(await item.getAttribute('data-level'))!] = Number(await item.getAttribute('data-count'));
    // What the user reads is the same number.
    expect((await item.textContent())!.replace(/,/g, '')).toContain(await item.getAttribute('data-count'));
  }
  return out;
}

describe.sequential('the log explorer’s redesign in Chromium', () => {
  for (const [viewport, options] of VIEWPORTS) {
    it(`${viewport}: the first view is the busiest environment over the last hour, with compact controls`, async () => {
      const { page } = await explorer(options);
      const url = new URL(page.url());
      expect(url.searchParams.get('env')).toBe('env-prod');
      expect(url.searchParams.get('range')).toBe('1h');
      await expect.poll(() => page.getByTestId('histogram-total').textContent()).toMatch(/matching rows$/);
      // The data (the histogram) starts well within the top 40 % of the screen.
      const top = (await page.getByRole('region', { name: 'Histogram' }).boundingBox())!.y;
      const height = options.viewport!.height;
      expect(top / height).toBeLessThan(viewport === 'desktop' ? 0.15 : 0.4);
      if (viewport === 'desktop') {
        // One toolbar row: every control on the same line.
        const middles = await page
          .getByRole('toolbar')
          .locator(':scope > *')
          .evaluateAll((els) =>
            els.map((e) => {
              const r = e.getBoundingClientRect();
              return r.top + r.height / 2;
            }),
          );
        expect(Math.max(...middles) - Math.min(...middles)).toBeLessThan(3);
      }
      // No native date-time input, no select box in the toolbar: times are typed as YYYY-MM-DD HH:mm:ss.
      expect(await page.locator('input[type="datetime-local"], .toolbar select').count()).toBe(0);
      await page.getByRole('button', { name: /^Time/ }).click();
      await page.getByRole('textbox', { name: 'From' }).waitFor();
      expect(await page.getByRole('textbox', { name: 'From' }).inputValue()).toMatch(
        /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
      );
      await page.getByRole('textbox', { name: 'From' }).fill('2026-11-27 5:33 PM');
      await page.getByRole('button', { name: 'Apply range' }).click();
      await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/YYYY-MM-DD HH:mm:ss/);
      await page.keyboard.press('Escape');
      await shot(page, 'first-view', viewport);
      await noOverflow(page, viewport);
    });

    it(`${viewport}: live tail picks up a stream created after it started, labelled with its own source`, async () => {
      const { page } = await explorer(options);
      await page.getByRole('button', { name: 'Live', exact: true }).click();
      const state = page.getByTestId('tail-state');
      await expect.poll(() => state.textContent(), { timeout: 10_000 }).toBe('Live');
      const stamp = `${viewport}-${Date.now().toString(36)}`;
      // Streams no query has ever seen, created now: a new container of each source.
      await ingest(t, [
        {
          target: { accountId: 'local-a', logGroup: GROUPS.web, logStream: `web/new-${stamp}` },
          message: `WARN fresh web ${stamp}`,
          timestamp: Date.now(),
        },
        {
          target: { accountId: 'local-a', logGroup: GROUPS.access, logStream: `access/new-${stamp}` },
          message: `ERROR fresh access ${stamp}`,
          timestamp: Date.now(),
        },
        {
          target: { accountId: 'local-a', logGroup: GROUPS.worker, logStream: `jobs/new-${stamp}` },
          message: `ERROR fresh worker ${stamp}`,
          timestamp: Date.now(),
        },
        // Not the worker source's (its prefix is jobs/): never shown.
        {
          target: { accountId: 'local-a', logGroup: GROUPS.worker, logStream: `cron/new-${stamp}` },
          message: `ERROR not a source ${stamp}`,
          timestamp: Date.now(),
        },
      ]);
      const live = rowsScroller(page).getByRole('listitem').filter({ hasText: stamp });
      await expect.poll(() => live.count(), { timeout: 10_000 }).toBe(3);
      const rows = (await readAllRows(page)).filter((r) => r.message.includes(stamp));
      const bySource = Object.fromEntries(rows.map((r) => [r.message, r.source]));
      expect(bySource).toEqual({
        [`WARN fresh web ${stamp}`]: `web · ${GROUPS.web}`,
        [`ERROR fresh access ${stamp}`]: `web · ${GROUPS.access}`,
        [`ERROR fresh worker ${stamp}`]: `worker · ${GROUPS.worker}`,
      });
      expect(await page.getByTestId('summary').textContent()).toBe('3 live rows');
      await shot(page, 'live-new-stream', viewport);

      // A new filter while live: the rows already tailed are filtered again, not dropped.
      await page.getByRole('searchbox', { name: 'Filter' }).fill('level:error');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await expect.poll(() => live.count()).toBe(2);
      expect(await page.getByTestId('summary').textContent()).toBe('2 live rows');
      expect(await page.locator('.results .summary').textContent()).toContain(
        'shown of 3 read — the rest filtered in the browser',
      );
      await expect.poll(() => state.textContent(), { timeout: 10_000 }).toBe('Live');
      await ingest(t, [
        {
          target: { accountId: 'local-a', logGroup: GROUPS.web, logStream: `web/newer-${stamp}` },
          message: `ERROR after the filter ${stamp}`,
          timestamp: Date.now(),
        },
      ]);
      await expect.poll(() => live.count(), { timeout: 10_000 }).toBe(3);
      await noOverflow(page, viewport);
      await page.getByRole('button', { name: 'Stop live tail' }).click();
      await settled(page);
    });

    it(`${viewport}: an empty result says so, and widens the range in one click`, async () => {
      const { page } = await explorer(options);
      const { body } = await runFilter(page, 'no-such-words-anywhere');
      expect(body.filter).toEqual({ kind: 'text', op: 'contains', value: 'no-such-words-anywhere' });
      expect(await settled(page)).toBe(0);
      const message = page.getByTestId('empty-message');
      await message.waitFor();
      expect(await message.textContent()).toBe('No logs match no-such-words-anywhere in the last 1 hour.');
      expect(await page.getByTestId('histogram-total').textContent()).toBe('0 matching rows');
      await shot(page, 'empty', viewport);
      await noOverflow(page, viewport);
      const widened = answerTo(page, QUERY);
      await page.getByRole('button', { name: 'Widen to last 3 hours' }).click();
      const w = (await widened).request().postDataJSON();
      expect(w.endTime - w.startTime).toBe(3 * 60 * 60_000);
      expect(new URL(page.url()).searchParams.get('range')).toBe('3h');
      await expect.poll(() => message.textContent()).toBe('No logs match no-such-words-anywhere in the last 3 hours.');
    });

    it(`${viewport}: an error after a good result leaves no stale row unmarked, and no "Counting…"`, async () => {
      const { page } = await explorer(options);
      const good = await settled(page);
      expect(good).toBeGreaterThan(0);
      opened!.problems.expect(/status of 503/);
      const failure = { code: 'logs:upstream:failed', message: 'The log backend failed.' };
      await page.route(/\/cloud\/logs\/logs-insights(\/histogram)?$/, (route) =>
        route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify(failure) }),
      );
      await page.getByRole('searchbox', { name: 'Filter' }).fill('level:error');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      const banner = page.getByTestId('error-banner');
      await banner.waitFor();
      expect(await banner.textContent()).toContain('The log backend failed.');
      // The rows still there are those of the earlier view: faded, and said so.
      await page.getByTestId('stale-notice').waitFor();
      expect(await page.getByTestId('stale-notice').textContent()).toBe('Showing results from before the error');
      expect(await page.locator('.table').getAttribute('class')).toContain('stale');
      expect(await page.locator('.results .summary').textContent()).toContain('shown from before the error');
      expect(await page.getByTestId('histogram-total').textContent()).toBe('Count unavailable');
      await page.waitForTimeout(500);
      expect(await page.getByText('Counting…').count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Load older' }).count()).toBe(0);
      await shot(page, 'error-after-result', viewport);
      await noOverflow(page, viewport);

      // Once the API answers again, the marks go.
      await page.unroute(/\/cloud\/logs\/logs-insights(\/histogram)?$/);
      const again = answerTo(page, QUERY);
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await again;
      await settled(page);
      expect(await page.getByTestId('stale-notice').count()).toBe(0);
      expect(await page.getByTestId('error-banner').count()).toBe(0);
    });

    it(`${viewport}: the histogram has a labelled time axis and count axis, and shows a bucket on hover`, async () => {
      const { page, buckets } = await explorer(options, '/ui/logs?range=15m');
      const x = await page.getByTestId('histogram-x-axis').locator('li').allTextContents();
      expect(x.length).toBeGreaterThanOrEqual(3);
      for (const label of x) expect(label).toMatch(/^\d\d:\d\d$/);
      const y = (await page.getByTestId('histogram-y-axis').locator('li').allTextContents()).map((l) =>
        Number(l.replace(/,/g, '')),
      );
      const totals = buckets.map((b) => Object.values(b.counts).reduce((a, c) => a + c, 0));
      expect(y[0]).toBe(0);
      expect(y.at(-1)).toBeGreaterThanOrEqual(Math.max(...totals));
      // Hover the fullest bucket: its time and its count.
      const i = totals.indexOf(Math.max(...totals));
      const plot = (await page.getByRole('img', { name: /Rows per time bucket/ }).boundingBox())!;
      await page.mouse.move(plot.x + ((i + 0.5) * plot.width) / buckets.length, plot.y + plot.height / 2);
      const tip = page.getByTestId('histogram-tooltip');
      await tip.waitFor();
      const text = (await tip.textContent())!;
      expect(text).toContain(`${totals[i]!.toLocaleString('en-US')} row`);
      const start = new Date(buckets[i]!.startMs);
      const hhmmss = [start.getHours(), start.getMinutes(), start.getSeconds()]
        .map((n) => String(n).padStart(2, '0'))
        .join(':');
      expect(text).toContain(hhmmss);
      await shot(page, 'histogram-axes', viewport);
      await noOverflow(page, viewport);
    });

    it(`${viewport}: the level facet's counts are the histogram's, and a click filters to a level`, async () => {
      const { page, buckets } = await explorer(options);
      const expected = levelTotals(buckets);
      expect(Object.keys(expected).length).toBeGreaterThan(2);
      expect(await facetCounts(page)).toEqual(expected);
      const heading = Number((await page.getByTestId('histogram-total').textContent())!.replace(/\D/g, ''));
      expect(Object.values(expected).reduce((a, c) => a + c, 0)).toBe(heading);
      // The live tails above wrote a few more.
      expect(heading).toBeGreaterThanOrEqual(seeded.prodRows);
      await shot(page, 'level-facet', viewport);

      const histogram = answerTo(page, HISTOGRAM);
      const query = answerTo(page, QUERY);
      await page.getByTestId('level-facet').getByRole('button', { name: /ERROR/ }).click();
      const [h, q] = await Promise.all([histogram, query]);
      expect(q.request().postDataJSON().filter).toEqual({ kind: 'level', levels: ['ERROR'] });
      expect(await page.getByRole('searchbox', { name: 'Filter' }).inputValue()).toBe('level:error');
      const after = levelTotals((await h.json()).buckets);
      expect(after).toEqual({ ERROR: expected.ERROR });
      await expect.poll(() => facetCounts(page)).toEqual({ ERROR: expected.ERROR });
      expect(
        await page.getByTestId('level-facet').getByRole('button', { name: /ERROR/ }).getAttribute('aria-pressed'),
      ).toBe('true');
      await settled(page);
      const rows = await readAllRows(page);
      expect(new Set(rows.map((r) => r.level))).toEqual(new Set(['ERROR']));
      await noOverflow(page, viewport);
    });
  }

  it('explains the filter syntax, runs an example, and refuses an unknown field prefix inline', async () => {
    const { page } = await explorer({ viewport: DESKTOP });
    const box = page.getByRole('searchbox', { name: 'Filter' });
    await box.fill('msg:"cache miss"');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const error = page.locator('#filter-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/unknown prefix msg: .*msg="cache miss"/);
    expect(await box.getAttribute('aria-invalid')).toBe('true');

    await page.getByRole('button', { name: 'Filter syntax help' }).click();
    const help = page.getByTestId('filter-help');
    await help.waitFor();
    expect(await help.textContent()).toContain('level:error,warn');
    await page.screenshot({ path: resultPath('explorer-filter-help-desktop.png') });
    const query = answerTo(page, QUERY);
    await help.getByRole('button', { name: 'level:error,warn', exact: true }).click();
    expect((await query).request().postDataJSON().filter).toEqual({ kind: 'level', levels: ['ERROR', 'WARN'] });
    expect(await box.inputValue()).toBe('level:error,warn');
    expect(await error.count()).toBe(0);
    expect(await help.count()).toBe(0);
  });

  it('remembers recent queries (never the token) and restores one from the filter box', async () => {
    const { page } = await explorer({ viewport: DESKTOP });
    await runFilter(page, 'payment');
    await settled(page);
    await runFilter(page, 'level:warn');
    await settled(page);
    const stored = () => page.evaluate(() => localStorage.getItem('berth.recent-queries') ?? '[]');
    await expect
      .poll(async () => JSON.parse(await stored()).map((e: { filterText: string }) => e.filterText))
      .toEqual(['level:warn', 'payment']);
    const text = await stored();
    expect(SECRETS.some((s) => text.includes(s))).toBe(false);

    const box = page.getByRole('searchbox', { name: 'Filter' });
    await box.focus();
    await box.press('ArrowDown');
    const list = page.getByRole('list', { name: 'Recent queries' });
    await list.waitFor();
    // The first entry takes the focus once the list is drawn; ↓ then moves to the second.
    const focused = () => page.evaluate(() => document.activeElement?.closest('li')?.textContent ?? '');
    await expect.poll(focused).toMatch(/^level:warn/);
    await page.keyboard.press('ArrowDown');
    await expect.poll(focused).toMatch(/^payment/);
    const query = answerTo(page, QUERY);
    await page.keyboard.press('Enter');
    expect((await query).request().postDataJSON().filter).toEqual({ kind: 'text', op: 'contains', value: 'payment' });
    expect(await box.inputValue()).toBe('payment');
  });

  it('resizes columns by their handle and wraps long lines on demand', async () => {
    const { page } = await explorer({ viewport: DESKTOP });
    const header = page.locator('.thead .th').nth(2);
    const before = (await header.boundingBox())!.width;
    const handle = page.getByTestId('resize-source');
    const box = (await handle.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + 80, box.y + box.height / 2, { steps: 4 });
    await page.mouse.up();
    await expect.poll(async () => (await header.boundingBox())!.width).toBeGreaterThan(before + 60);
    // The cells follow their header.
    const cell = rowsScroller(page).locator('.source').first();
    expect(Math.abs((await cell.boundingBox())!.width - (await header.boundingBox())!.width)).toBeLessThan(2);
    await handle.focus();
    await page.keyboard.press('ArrowLeft');
    expect(Number(await handle.getAttribute('aria-valuenow'))).toBeLessThan(before + 80);

    // A long line: one row high, then wrapped.
    await runFilter(page, 'order placed');
    await settled(page);
    const row = rowsScroller(page).getByRole('listitem').first();
    const oneLine = (await row.boundingBox())!.height;
    await page.getByRole('checkbox', { name: 'Wrap lines' }).check();
    await expect.poll(async () => (await row.boundingBox())!.height).toBeGreaterThan(oneLine * 1.5);
    await page.screenshot({ path: resultPath('explorer-wrapped-desktop.png') });
  });

  it('filters for, or out, a value of an expanded row', async () => {
    const { page } = await explorer({ viewport: DESKTOP });
    await runFilter(page, 'level:warn "slow request"');
    await settled(page);
    await rowsScroller(page).getByRole('listitem').first().getByRole('button').first().click();
    const fields = page.getByRole('group', { name: 'Filter by this row' });
    await fields.waitFor();
    const query = answerTo(page, QUERY);
    await fields.getByRole('button', { name: 'Filter for status = 503' }).click();
    expect((await query).request().postDataJSON().filter).toEqual({
      kind: 'and',
      nodes: [
        { kind: 'level', levels: ['WARN'] },
        { kind: 'text', op: 'contains', value: 'slow request' },
        { kind: 'field', path: 'status', op: 'eq', value: 503 },
      ],
    });
    expect(await page.getByRole('searchbox', { name: 'Filter' }).inputValue()).toBe(
      'level:warn "slow request" status=503',
    );
    await settled(page);
    // The same event, first again, stays expanded.
    const first = rowsScroller(page).getByRole('listitem').first().getByRole('button').first();
    if ((await first.getAttribute('aria-expanded')) === 'false') await first.click();
    const out = answerTo(page, QUERY);
    await fields.getByRole('button', { name: /^Filter out stream / }).click();
    const filter = (await out).request().postDataJSON().filter;
    expect(filter.nodes.at(-1)).toMatchObject({ kind: 'not', node: { kind: 'stream', op: 'equals' } });
  });
});
