// The log explorer (issue 13) end to end: the Chromium of test/e2e/support/chromium.ts drives the page Berth serves at
// /ui/logs against a running Berth (local provider; PGlite, or PostgreSQL with TEST_DATABASE_URL), through role and label selectors
// only (which also proves the controls' accessible names). Every test ends with no console error, no uncaught
// exception, no CSP violation, no dialog and no token in any URL.
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import { parseFilterText } from '../../ui/src/lib/filter-text.js';
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
  rowButton,
  rowsScroller,
  signIn,
} from './support/browser.js';
import { GROUPS, ingest, ORG_B_SECRET, type Seeded, seed, startE2eApp, TASK_ID, TOKENS } from './support/world.js';

const QUERY = '/cloud/logs/logs-insights';
const HISTOGRAM = '/cloud/logs/logs-insights/histogram';
const SECRETS = Object.values(TOKENS).map((token) => token.split('_').at(-1)!);

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
  const done = opened;
  opened = undefined;
  if (done) await closeChecked(done, SECRETS);
});

async function open(options: Parameters<typeof openPage>[2] = {}): Promise<Page> {
  opened = await openPage(browser, t.url, options);
  return opened.page;
}

/** Opens the explorer signed in as the viewer, and waits for the first query's answer. */
async function explorer(options: Parameters<typeof openPage>[2] = {}, path = '/ui/logs'): Promise<Page> {
  const page = await open(options);
  await page.goto(path);
  const first = page.waitForResponse((r) => r.url().endsWith(QUERY) && r.request().method() === 'POST');
  await signIn(page, TOKENS.viewer);
  await first;
  await settled(page);
  return page;
}

/** The table's summary once no query runs: its row count. */
async function settled(page: Page): Promise<number> {
  const summary = page.getByTestId('summary');
  await expect.poll(() => summary.textContent(), { timeout: 15_000 }).toMatch(/^[\d,]+ rows?$/);
  return Number((await summary.textContent())!.replace(/\D/g, ''));
}

function histogramTotal(page: Page): Promise<number> {
  return page
    .getByTestId('histogram-total')
    .textContent()
    .then((s) => Number(s!.replace(/ matching rows?$/, '').replace(/,/g, '')));
}

/** Opens the source panel of the toolbar (it stays open while its boxes are ticked). */
async function sources(page: Page): Promise<void> {
  const button = page.getByRole('button', { name: /^Sources/ });
  if ((await button.getAttribute('aria-expanded')) !== 'true') await button.click();
  await page.getByTestId('source-panel').waitFor();
}

/** The answer to the view's own query or histogram (not to the one-bucket counts that pick the first view). */
const answerTo = (page: Page, path: string) =>
  page.waitForResponse(
    (r) =>
      new URL(r.url()).pathname === path &&
      r.request().method() === 'POST' &&
      (r.request().postDataJSON() as { buckets?: number }).buckets !== 1,
    { timeout: 10_000 },
  );

/** Runs `action` and answers the body of the log query it causes, and the query's answer. */
async function queried(page: Page, action: () => Promise<unknown>): Promise<{ body: any; result: any }> {
  const response = answerTo(page, QUERY);
  await action();
  const r = await response;
  return { body: (r.request() as Request).postDataJSON(), result: await r.json() };
}

/** The same, with the histogram's answer to the same change of view. */
async function queriedWithHistogram(
  page: Page,
  action: () => Promise<unknown>,
): Promise<{ body: any; result: any; buckets: { startMs: number; endMs: number; counts: Record<string, number> }[] }> {
  const histogram = answerTo(page, HISTOGRAM);
  const q = await queried(page, action);
  return { ...q, buckets: (await (await histogram).json()).buckets };
}

const windowShown = (page: Page) =>
  page
    .getByTestId('window')
    .locator('time')
    .evaluateAll((times) => times.map((el) => Date.parse(el.getAttribute('datetime')!)));

describe.sequential('the log explorer in Chromium', () => {
  it('is served with a strict Content-Security-Policy', async () => {
    for (const path of ['/ui/', '/ui/logs']) {
      const res = await t.request('GET', path);
      expect(res.status).toBe(200);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    }
    const page = await open();
    const response = await page.goto('/ui/logs');
    const csp = (await response!.allHeaders())['content-security-policy'];
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
  });

  it('signs in with a pasted token kept in sessionStorage only, and shows whose it is', async () => {
    const page = await open();
    await page.goto('/ui/logs');
    // A wrong token first: refused, nothing kept (Chromium logs the 401 itself).
    opened!.problems.expect(/status of 401/);
    await page.getByLabel('API token').fill('berth_k-nobody_not-a-real-secret-0000000');
    await page.getByRole('button', { name: 'Use token' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not accepted');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await signIn(page, TOKENS.viewer);
    const who = page.getByTestId('who');
    await expect.poll(() => who.textContent()).toContain('Viewer');
    expect(await who.textContent()).toContain('k-viewer');
    expect(await who.textContent()).toContain('Org A (viewer)');
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([TOKENS.viewer]);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(page.url()).not.toContain(TOKENS.viewer);
    await settled(page);
    // The busiest environment of the last hour is chosen; org B's rows of the same group name never show.
    await expect.poll(() => new URL(page.url()).searchParams.get('env')).toBe('env-prod');
    await sources(page);
    expect(await page.getByRole('radio', { name: 'shop / production' }).isChecked()).toBe(true);
    expect(await page.content()).not.toContain(ORG_B_SECRET);

    // A reload signs in again from sessionStorage; signing out forgets the token.
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('picks sources and queries them', async () => {
    const page = await explorer();
    await expect.poll(() => histogramTotal(page)).toBe(seeded.prodRows);

    await sources(page);
    const worker = await queried(page, () => page.getByRole('checkbox', { name: 'worker', exact: true }).check());
    expect(worker.body.logSourceKeys).toEqual(['mi-worker::jobs']);
    expect(await settled(page)).toBe(300);
    await expect.poll(() => histogramTotal(page)).toBe(300);
    const rows = await readAllRows(page);
    expect(rows).toHaveLength(300);
    expect(new Set(rows.map((r) => r.source))).toEqual(new Set([`worker · ${GROUPS.worker}`]));
    expect(new Set(rows.map((r) => r.level))).toEqual(new Set(['INFO', 'DEBUG', 'WARN', 'ERROR', 'TRACE']));

    const both = await queried(page, () => page.getByRole('checkbox', { name: GROUPS.access }).check());
    expect(new Set(both.body.logSourceKeys)).toEqual(new Set(['mi-worker::jobs', 'mi-web::access']));
    expect(await settled(page)).toBe(900);

    // A deployment resource: only its task's streams.
    const task = await queried(page, () => page.getByRole('radio', { name: /dr-task/ }).check());
    expect(task.body).toMatchObject({ deploymentResourceId: 'dr-task' });
    expect(task.body.logSourceKeys).toBeUndefined();
    expect(await settled(page)).toBe(seeded.taskRows);
    const taskRows = await readAllRows(page);
    expect(new Set(taskRows.map((r) => r.stream))).toEqual(new Set([`ecs/web/${TASK_ID}`]));
  });

  it('filters with the one-line box and with the tree editor, which round-trip', async () => {
    const page = await explorer();
    await sources(page);
    await queried(page, () => page.getByRole('checkbox', { name: 'worker', exact: true }).check());
    await settled(page);
    await queried(page, () => page.getByRole('checkbox', { name: GROUPS.access }).check());
    await settled(page);
    await page.keyboard.press('Escape');

    // The one-line box.
    const box = page.getByRole('searchbox', { name: 'Filter' });
    const line = await queried(page, async () => {
      await box.fill('level:error');
      await box.press('Enter');
    });
    expect(line.body.filter).toEqual({ kind: 'level', levels: ['ERROR'] });
    expect(await settled(page)).toBe(180);
    expect(new Set((await readAllRows(page)).map((r) => r.level))).toEqual(new Set(['ERROR']));

    // The tree shows the same filter; add "message contains payment", then negate it.
    await page.getByRole('button', { name: 'Edit as tree' }).click();
    const tree = page.getByTestId('filter-editor');
    expect(await tree.getByRole('checkbox', { name: 'ERROR' }).isChecked()).toBe(true);
    expect(await tree.getByRole('checkbox', { name: 'WARN' }).isChecked()).toBe(false);
    // A new text predicate starts empty (it matches every row).
    await queried(page, () => tree.getByRole('button', { name: 'text', exact: true }).click());
    expect(await settled(page)).toBe(180);
    const text = tree.getByRole('textbox', { name: 'Text' });
    const contains = await queried(page, async () => {
      await text.fill('payment');
      await text.press('Tab');
    });
    expect(contains.body.filter).toEqual({
      kind: 'and',
      nodes: [
        { kind: 'level', levels: ['ERROR'] },
        { kind: 'text', op: 'contains', value: 'payment' },
      ],
    });
    expect(await settled(page)).toBe(90);

    const negated = await queried(page, () =>
      // The text condition is the last one: its NOT is the last.
      tree.getByRole('button', { name: 'NOT', exact: true }).last().click(),
    );
    const expected: FilterNode = {
      kind: 'and',
      nodes: [
        { kind: 'level', levels: ['ERROR'] },
        { kind: 'not', node: { kind: 'text', op: 'contains', value: 'payment' } },
      ],
    };
    expect(negated.body.filter).toEqual(expected);
    expect(await settled(page)).toBe(90);
    const rows = await readAllRows(page);
    expect(rows.every((r) => r.message.startsWith('{') && r.message.includes('upstream timeout'))).toBe(true);

    // The one-line box spells the tree, and reads back as the same tree.
    const spelled = await box.inputValue();
    expect(spelled).not.toBe('');
    expect(parseFilterText(spelled)).toEqual({ ok: true, filter: expected });
    // The histogram counts what the table shows.
    await expect.poll(() => histogramTotal(page)).toBe(90);
  });

  it('pages older rows until the window is exhausted, without duplicates', async () => {
    const page = await explorer();
    const counts = [await settled(page)];
    // The first page ends before the millisecond it would cut (31 rows share it).
    expect(counts[0]).toBeLessThan(1_000);
    expect(counts[0]).toBeGreaterThan(900);
    const older = page.getByRole('button', { name: 'Load older' });
    while (await older.isVisible()) {
      const { body } = await queried(page, () => older.click());
      expect(body.endTime).toBeLessThan(Date.now() - 60_000);
      counts.push(await settled(page));
      expect(counts.at(-1)).toBeGreaterThan(counts.at(-2)!);
      expect(counts.length).toBeLessThan(6);
    }
    expect(counts.at(-1)).toBe(seeded.prodRows);
    expect(await page.getByText('No older rows in this window.').isVisible()).toBe(true);
    const rows = await readAllRows(page);
    expect(rows).toHaveLength(seeded.prodRows);
    expect(rows.map((r) => r.position)).toEqual(rows.map((_, i) => i + 1));
    expect(new Set(rows.map((r) => r.message)).size).toBe(seeded.prodRows);
  });

  it('shows a partial banner naming the log group it could not read', async () => {
    const page = await explorer();
    await sources(page);
    const { result } = await queried(page, () => page.getByRole('radio', { name: 'shop / staging' }).check());
    expect(result).toMatchObject({ partial: true, missedSources: [GROUPS.dead] });
    expect(await settled(page)).toBe(seeded.stagingRows);
    const banner = page.getByRole('status').filter({ hasText: 'Partial results' });
    await banner.waitFor();
    expect(await banner.textContent()).toContain(GROUPS.dead);
    expect(await banner.textContent()).not.toContain(GROUPS.api);
  });

  it('zooms from the histogram by dragging across bars and by clicking a bar', async () => {
    const page = await open();
    await page.goto('/ui/logs?range=15m');
    const { buckets: buckets0 } = await queriedWithHistogram(page, () => signIn(page, TOKENS.viewer));
    await settled(page);
    const histogram = page.getByRole('img', { name: /Rows per time bucket/ });
    const box = (await histogram.boundingBox())!;
    const x = (bucket: number, of = 60) => box.x + ((bucket + 0.5) * box.width) / of;
    const y = box.y + box.height / 2;
    const [start0, end0] = await windowShown(page);
    expect(end0! - start0!).toBe(15 * 60_000);

    // Drag from bucket 10 to bucket 20.
    const dragged = await queriedWithHistogram(page, async () => {
      await page.mouse.move(x(10), y);
      await page.mouse.down();
      await page.mouse.move(x(15), y, { steps: 3 });
      await page.mouse.move(x(20), y, { steps: 3 });
      await page.mouse.up();
    });
    expect([dragged.body.startTime, dragged.body.endTime]).toEqual([buckets0[10]!.startMs, buckets0[20]!.endMs]);
    await settled(page);
    expect(await windowShown(page)).toEqual([buckets0[10]!.startMs, buckets0[20]!.endMs]);
    expect(new URL(page.url()).searchParams.get('from')).toBe(String(buckets0[10]!.startMs));
    const buckets1 = dragged.buckets;

    // Click one bar of the new histogram.
    const clicked = await queried(page, () => page.mouse.click(x(30), y));
    expect([clicked.body.startTime, clicked.body.endTime]).toEqual([buckets1[30]!.startMs, buckets1[30]!.endMs]);
    const shown = await settled(page);
    const [start2, end2] = await windowShown(page);
    expect([start2, end2]).toEqual([buckets1[30]!.startMs, buckets1[30]!.endMs]);
    expect(end2! - start2!).toBeLessThan((end0! - start0!) / 60);
    expect(shown).toBe(Object.values(buckets1[30]!.counts).reduce((a, b) => a + b, 0));
    expect(shown).toBeGreaterThan(0);
  });

  it('live-tails a source with a stream prefix: an event written during the test shows once; pause and resume', async () => {
    const page = await explorer();
    await sources(page);
    await queried(page, () => page.getByRole('checkbox', { name: 'worker', exact: true }).check());
    await settled(page);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Live', exact: true }).click();
    const state = page.getByTestId('tail-state');
    await expect.poll(() => state.textContent(), { timeout: 10_000 }).toBe('Live');

    const stamp = `live ${Date.now().toString(36)}`;
    const target = { accountId: 'local-a', logGroup: GROUPS.worker, logStream: 'jobs/1' };
    await ingest(t, [{ target, message: `WARN ${stamp} one`, timestamp: Date.now() }]);
    const liveRows = rowsScroller(page)
      .getByRole('listitem')
      .filter({ hasText: `${stamp} one` });
    await expect.poll(() => liveRows.count(), { timeout: 10_000 }).toBe(1);
    expect(await liveRows.getByText('WARN', { exact: true }).isVisible()).toBe(true);

    await page.getByRole('button', { name: 'Pause' }).click();
    await expect.poll(() => state.textContent()).toBe('Paused');
    await ingest(t, [{ target, message: `INFO ${stamp} two`, timestamp: Date.now() }]);
    await page.waitForTimeout(1_000);
    expect(
      await rowsScroller(page)
        .getByRole('listitem')
        .filter({ hasText: `${stamp} two` })
        .count(),
    ).toBe(0);

    await page.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => state.textContent(), { timeout: 10_000 }).toBe('Live');
    await expect
      .poll(
        () =>
          rowsScroller(page)
            .getByRole('listitem')
            .filter({ hasText: `${stamp} two` })
            .count(),
        { timeout: 10_000 },
      )
      .toBe(1);
    // A few more polls: nothing comes twice.
    await page.waitForTimeout(1_000);
    const all = await readAllRows(page);
    expect(all.map((r) => r.message).filter((m) => m.includes(stamp))).toEqual([
      `WARN ${stamp} one`,
      `INFO ${stamp} two`,
    ]);
    expect(await page.getByTestId('summary').textContent()).toBe('2 live rows');

    await page.getByRole('button', { name: 'Stop live tail' }).click();
    await settled(page);
  });

  it('live-tails a whole environment (sources without a stream prefix)', async () => {
    const page = await explorer();
    await page.getByRole('button', { name: 'Live', exact: true }).click();
    const state = page.getByTestId('tail-state');
    await expect.poll(() => state.textContent(), { timeout: 10_000 }).toBe('Live');
    const stamp = `env ${Date.now().toString(36)}`;
    await ingest(t, [
      {
        target: { accountId: 'local-a', logGroup: GROUPS.web, logStream: 'web/1' },
        message: `ERROR ${stamp}`,
        timestamp: Date.now(),
      },
    ]);
    await expect
      .poll(() => rowsScroller(page).getByRole('listitem').filter({ hasText: stamp }).count(), { timeout: 10_000 })
      .toBe(1);
  });

  it('copies a row as JSON and shares the view by URL, without the token', async () => {
    const page = await explorer({ permissions: ['clipboard-read', 'clipboard-write'] });
    await sources(page);
    await queried(page, () => page.getByRole('checkbox', { name: GROUPS.access }).check());
    await settled(page);
    await page.keyboard.press('Escape');
    const box = page.getByRole('searchbox', { name: 'Filter' });
    await box.fill('level:warn status=503');
    await queried(page, () => box.press('Enter'));
    const count = await settled(page);
    expect(count).toBe(60);

    const first = rowButton(page, 0);
    expect(await first.textContent()).toContain('WARN');
    await first.click();
    expect(await first.getAttribute('aria-expanded')).toBe('true');
    const detail = page.getByTestId('message-detail');
    const pretty = (await detail.textContent())!;
    expect(pretty).toContain('\n  "level": "warn",\n');
    const message = JSON.stringify(JSON.parse(pretty));
    await page.getByRole('button', { name: 'Copy row as JSON' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
    expect(copied).toMatchObject({ level: 'WARN', logStream: 'access/1', message });
    expect(typeof copied.timestamp).toBe('number');

    // The view's URL, opened in a new tab: everything comes back once the user signs in there.
    const url = page.url();
    expect(SECRETS.some((s) => url.includes(s))).toBe(false);
    const shared = new URL(url);
    expect(shared.searchParams.get('sources')).toBe('mi-web::access');
    const other = await opened!.context.newPage();
    await other.goto(url);
    const restored = other.waitForResponse((r) => new URL(r.url()).pathname === QUERY);
    await signIn(other, TOKENS.viewer);
    const body = (await restored).request().postDataJSON();
    expect(body.logSourceKeys).toEqual(['mi-web::access']);
    expect(body.filter).toEqual({
      kind: 'and',
      nodes: [
        { kind: 'level', levels: ['WARN'] },
        { kind: 'field', path: 'status', op: 'eq', value: 503 },
      ],
    });
    expect(await settled(other)).toBe(60);
    expect(await other.getByRole('searchbox', { name: 'Filter' }).inputValue()).toBe('level:warn status=503');
    await sources(other);
    expect(await other.getByRole('checkbox', { name: GROUPS.access }).isChecked()).toBe(true);
    expect(await other.getByRole('checkbox', { name: GROUPS.web }).isChecked()).toBe(false);
    expect(other.url()).toBe(url);
  });

  it('is reachable by keyboard: Tab reaches the filter box and the table', async () => {
    const page = await explorer();
    // What has the focus: `<tag>#<id>`, `rows` for the table's body, `row <n> <aria-expanded>` for a row's button.
    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement!;
        if (el.getAttribute('data-testid') === 'rows') return 'rows';
        const item = el.closest('[aria-posinset]');
        if (item && el.closest('[data-testid="rows"]'))
          return `row ${item.getAttribute('aria-posinset')} ${el.getAttribute('aria-expanded')}`;
        return `${el.tagName.toLowerCase()}#${el.id}`;
      });
    const tabUntil = async (want: RegExp, limit: number): Promise<number> => {
      for (let i = 1; i <= limit; i++) {
        await page.keyboard.press('Tab');
        if (want.test(await focused())) return i;
      }
      throw new Error(`Tab never reached ${want} (last: ${await focused()})`);
    };
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    expect(await tabUntil(/^input#filter-text$/, 40)).toBeGreaterThan(0);
    await page.keyboard.type('level:error');
    const q = await queried(page, () => page.keyboard.press('Enter'));
    expect(q.body.filter).toEqual({ kind: 'level', levels: ['ERROR'] });
    await settled(page);
    await tabUntil(/^rows$/, 40);
    // Into the rows, and Enter opens one.
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('row 1 false');
    await page.keyboard.press('Enter');
    await page.getByTestId('message-detail').waitFor();
    expect(await focused()).toBe('row 1 true');
  });

  it('fits 1280×800 and 390×844 (screenshots in test-results/), with no horizontal overflow on the phone', async () => {
    const desktop = await explorer({ viewport: DESKTOP });
    // At least: the live tails above wrote a few more.
    await expect.poll(() => histogramTotal(desktop)).toBeGreaterThanOrEqual(seeded.prodRows);
    await desktop.screenshot({ path: resultPath('explorer-desktop.png'), fullPage: true });
    const wide = await horizontalOverflow(desktop);
    expect(wide.scrollWidth, wide.widest.join(', ')).toBeLessThanOrEqual(wide.clientWidth);
    await opened!.context.close();

    const phone = await explorer({ viewport: MOBILE, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
    await expect.poll(() => histogramTotal(phone)).toBeGreaterThanOrEqual(seeded.prodRows);
    await phone.screenshot({ path: resultPath('explorer-mobile.png'), fullPage: true });
    const narrow = await horizontalOverflow(phone);
    expect(narrow.scrollWidth, narrow.widest.join(', ')).toBeLessThanOrEqual(MOBILE.width);
    // The tree editor and an expanded row fit too.
    await phone.getByRole('button', { name: 'Edit as tree' }).click();
    await rowButton(phone, 0).click();
    await phone.getByTestId('message-detail').waitFor();
    const opened2 = await horizontalOverflow(phone);
    expect(opened2.scrollWidth, opened2.widest.join(', ')).toBeLessThanOrEqual(MOBILE.width);
  });
});
