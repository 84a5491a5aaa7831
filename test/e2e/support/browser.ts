// The browser side of the end-to-end tests: the Chromium shipped inside the `@sparticuz/chromium` npm package
// (./chromium.ts), driven by playwright-core of the same Chromium major, one browser per test file, a fresh context per test, and everything the page should never do
// (console errors, uncaught exceptions, Content-Security-Policy violations, dialogs) collected for the test to check.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  chromium,
  type Locator,
  type Page,
} from 'playwright-core';
import { expect } from 'vitest';
import { bundledChromium } from './chromium.js';

// Not the package's own default arguments: they include --disable-web-security and --single-process.
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];
export const RESULTS_DIR = resolve('test-results');

export const DESKTOP = { width: 1280, height: 800 } as const;
export const MOBILE = { width: 390, height: 844 } as const;

export async function launchBrowser(): Promise<Browser> {
  const bundled = await bundledChromium();
  return chromium.launch({
    executablePath: bundled.executablePath,
    args: CHROMIUM_ARGS,
    env: { ...process.env, ...bundled.env },
  });
}

/** What the page did that it never should. */
export class Problems {
  readonly console: string[] = [];
  readonly pageErrors: string[] = [];
  readonly csp: string[] = [];
  readonly dialogs: string[] = [];
  /** Every URL the page requested or navigated to (a token must never be in one). */
  readonly urls: string[] = [];
  private readonly expected: RegExp[] = [];

  /** A console message a step causes on purpose (Chromium logs a refused request as an error). */
  expect(message: RegExp): void {
    this.expected.push(message);
  }

  all(): string[] {
    return [
      ...this.console.filter((m) => !this.expected.some((re) => re.test(m))).map((m) => `console: ${m}`),
      ...this.pageErrors.map((m) => `page error: ${m}`),
      ...this.csp.map((m) => `CSP violation: ${m}`),
      ...this.dialogs.map((m) => `dialog: ${m}`),
    ];
  }
}

export interface OpenedPage {
  context: BrowserContext;
  page: Page;
  problems: Problems;
}

// Runs in every document before the page's own script: CSP violations are reported to the test through a binding
// (a CDP binding, not a script the page's policy could refuse).
const CSP_LISTENER = `
document.addEventListener('securitypolicyviolation', (e) => {
  globalThis.__e2eCspViolation?.(JSON.stringify({
    directive: e.effectiveDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber, sample: e.sample,
  }));
}, true);
`;

/**
 * Closes a test's page and checks how it went: no console error (but those the test expected), no uncaught
 * exception, no CSP violation, no dialog, and none of `secrets` in any URL the page requested or navigated to.
 */
export async function closeChecked(opened: OpenedPage, secrets: readonly string[] = []): Promise<void> {
  const { problems, context } = opened;
  await context.close();
  expect(problems.all()).toEqual([]);
  expect(problems.urls.filter((u) => secrets.some((s) => u.includes(s)))).toEqual([]);
}

/** A new context (own storage, own clipboard permissions) and page, its problems collected from the first request. */
export async function openPage(
  browser: Browser,
  baseURL: string,
  options: BrowserContextOptions = {},
): Promise<OpenedPage> {
  const context = await browser.newContext({ baseURL, viewport: DESKTOP, ...options });
  // Well inside a test's own timeout, so a missing control fails with its locator named.
  context.setDefaultTimeout(8_000);
  const problems = new Problems();
  await context.exposeBinding('__e2eCspViolation', (_source, detail: string) => {
    problems.csp.push(detail);
  });
  await context.addInitScript({ content: CSP_LISTENER });
  const page = await context.newPage();
  watch(page, problems);
  context.on('page', (p) => watch(p, problems));
  return { context, page, problems };
}

function watch(page: Page, problems: Problems): void {
  page.on('console', (m) => {
    if (m.type() === 'error') problems.console.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.pageErrors.push(e.stack ?? e.message));
  page.on('request', (r) => problems.urls.push(r.url()));
  page.on('framenavigated', (f) => problems.urls.push(f.url()));
  page.on('dialog', (d) => {
    problems.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
}

/**
 * The log explorer built from the current sources: `vite build` into a directory named by a hash of what goes into
 * the page (ui/, src/core/ it imports, the Vite config), so a stale dist/ui is never tested and files running at
 * the same time share one build (each builds apart and renames into place; the first rename wins).
 * E2E_UI_DIR names an already built page instead (e.g. dist/ui after `npm run build`).
 */
export async function builtUiDir(): Promise<string> {
  if (process.env.E2E_UI_DIR) return resolve(process.env.E2E_UI_DIR);
  const hash = createHash('sha256');
  for (const file of [...filesUnder('ui'), ...filesUnder('src/core'), 'vite.config.ts', 'package-lock.json']) {
    hash.update(file).update('\0').update(readFileSync(file)).update('\0');
  }
  const root = resolve('node_modules/.cache/berth-e2e-ui');
  const dir = join(root, hash.digest('hex').slice(0, 16));
  if (existsSync(join(dir, 'index.html'))) return dir;
  mkdirSync(root, { recursive: true });
  const scratch = `${dir}.${process.pid}.tmp`;
  const { build } = await import('vite');
  await build({
    configFile: resolve('vite.config.ts'),
    logLevel: 'warn',
    build: { outDir: scratch, emptyOutDir: true },
  });
  try {
    renameSync(scratch, dir);
  } catch (error) {
    // Another file built the same sources first.
    if (!existsSync(join(dir, 'index.html'))) throw error;
    rmSync(scratch, { recursive: true, force: true });
  }
  return dir;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

export function resultPath(name: string): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  return join(RESULTS_DIR, name);
}

/** Pastes a token into the sign-in page's advanced form and waits for the explorer. */
export async function signIn(page: Page, token: string): Promise<void> {
  const advanced = page.locator('details.advanced');
  await advanced.waitFor({ state: 'attached' });
  await advanced.evaluate((details) => {
    (details as HTMLDetailsElement).open = true;
  });
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

export interface TableRowText {
  position: number;
  /** The row's button: its accessible name. */
  label: string;
  level: string;
  source: string;
  stream: string;
  message: string;
}

/** The table's scrolling body (its rows are list items inside it). */
export function rowsScroller(page: Page): Locator {
  return page.getByTestId('rows');
}

/** The n-th row (0: the first in view order) of the rows in the DOM: its expand button. */
export function rowButton(page: Page, n: number): Locator {
  return rowsScroller(page).getByRole('listitem').nth(n).getByRole('button').first();
}

/**
 * Every row the virtualized table holds, read by scrolling it from top to bottom (only the rows in view are in the
 * DOM): what the user can reach, not what the API sent.
 */
export async function readAllRows(page: Page): Promise<TableRowText[]> {
  return rowsScroller(page).evaluate(async (scroller: HTMLElement) => {
    const seen = new Map<number, TableRowText>();
    const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const collect = () => {
      for (const item of scroller.querySelectorAll<HTMLElement>('[aria-posinset]')) {
        const position = Number(item.getAttribute('aria-posinset'));
        const button = item.querySelector('button');
        const text = (cls: string) => button?.querySelector(`.${cls}`)?.textContent ?? '';
        seen.set(position, {
          position,
          label: button?.getAttribute('aria-label') ?? button?.textContent ?? '',
          level: text('level'),
          source: text('source'),
          stream: text('stream'),
          message: text('message'),
        });
      }
    };
    scroller.scrollTop = 0;
    await frame();
    for (;;) {
      collect();
      if (scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1) break;
      scroller.scrollTop += Math.max(50, scroller.clientHeight - 40);
      await frame();
    }
    scroller.scrollTop = 0;
    await frame();
    return [...seen.values()].sort((a, b) => a.position - b.position);
  });
}

/** The document is not wider than the viewport (nothing to scroll sideways). */
export function horizontalOverflow(
  page: Page,
): Promise<{ scrollWidth: number; clientWidth: number; widest: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const widest = [...document.querySelectorAll<HTMLElement>('body *')]
      .filter((el) => el.getBoundingClientRect().right > width + 0.5)
      .slice(0, 5)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}`);
    return { scrollWidth: document.documentElement.scrollWidth, clientWidth: width, widest };
  });
}
