// Signing in to the log explorer in Chromium: through a real OpenID Provider's own login and consent pages
// (`oidc-provider`, in process), and with an email and a password. The page then works through the session cookie,
// sees rows, signs out, and cannot see them again.
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { noSignIn } from '../../src/sign-in-config.js';
import type { TestApp } from '../support/app.js';
import { settingsFor, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { mergeWorld } from '../support/world.js';
import { closeChecked, launchBrowser, type OpenedPage, openPage } from './support/browser.js';
import { e2eWorld, ORG_A, seed, startE2eApp } from './support/world.js';

const PASSWORD = 'viewer password 0123';

let t: TestApp;
let op: TestOidcProvider;
let browser: Browser;
let opened: OpenedPage | undefined;

beforeAll(async () => {
  op = await startOidcProvider();
  const world = e2eWorld() as { principals: Record<string, unknown>[] };
  for (const p of world.principals) {
    if (p.id === 'p-viewer') {
      p.identities = [{ provider: 'SSO_BROKER', issuer: op.issuer, subject: 'vera' }];
      p.email = 'viewer@a.example';
      p.password = PASSWORD;
    }
  }
  [t, browser] = await Promise.all([
    startE2eApp(
      {},
      {
        world: mergeWorld(world, {}),
        signIn: (config) => ({
          ...noSignIn(config),
          passwordSignIn: true,
          providers: [settingsFor(op, 'SSO_BROKER', { displayName: 'Test SSO' })],
        }),
      },
    ),
    launchBrowser(),
  ]);
  op.allowRedirects([`${t.url}/auth/callback/SSO_BROKER`]);
  op.accounts.set('vera', { sub: 'vera' });
  await seed(t);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await op?.close();
});
afterEach(async () => {
  const done = opened;
  opened = undefined;
  if (done) await closeChecked(done, [PASSWORD]);
});

async function open(): Promise<Page> {
  opened = await openPage(browser, t.url);
  // The provider's development pages load a web font from the internet, which this machine cannot reach.
  opened.problems.expect(/fonts\.googleapis|favicon\.ico|ERR_(NAME_NOT_RESOLVED|INTERNET_DISCONNECTED|CONNECTION)/);
  return opened.page;
}

/** Waits until the table shows rows (the first view's query has answered); their count. */
async function rowsShown(page: Page): Promise<number> {
  const summary = page.getByTestId('summary');
  const count = async () => {
    const text = (await summary.textContent().catch(() => '')) ?? '';
    return /^[\d,]+ rows?$/.test(text) ? Number(text.replace(/\D/g, '')) : 0;
  };
  await expect.poll(count, { timeout: 15_000 }).toBeGreaterThan(0);
  return count();
}

/** After signing out: the sign-in page, and the API refuses the old cookie's holder. */
async function expectSignedOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('link', { name: 'Sign in with Test SSO' }).waitFor();
  await page.goto('/ui/logs');
  await page.getByRole('link', { name: 'Sign in with Test SSO' }).waitFor();
  expect(await page.getByTestId('summary').count()).toBe(0);
  const status = await page.evaluate(() => fetch('/auth/session').then((r) => r.json()));
  expect(status).toEqual({ data: null });
  const cookies = await page.context().cookies(t.url);
  expect(cookies.find((c) => c.name === 'berth_session')).toBeUndefined();
}

describe('signing in to the log explorer', () => {
  it("signs in through the provider's login page, lands on /ui/logs with rows, signs out and sees none", async () => {
    const page = await open();
    await page.goto('/ui/logs');
    await page.getByRole('link', { name: 'Sign in with Test SSO' }).click();
    // The provider's own pages.
    await page.waitForURL((url) => url.origin === op.issuer);
    await page.locator('input[name="login"]').fill('vera');
    await page.locator('input[name="password"]').fill('anything');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL((url) => url.origin === new URL(t.url).origin && url.pathname === '/ui/logs');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByTestId('who').textContent()).toContain('signed in with SSO_BROKER');
    expect(await rowsShown(page)).toBeGreaterThan(0);
    const cookie = (await page.context().cookies(t.url)).find((c) => c.name === 'berth_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    // Nothing of the session in the page's storage.
    expect(await page.evaluate(() => sessionStorage.length + localStorage.length)).toBe(0);
    await expectSignedOut(page);
  });

  it('signs in with an email and a password', async () => {
    const page = await open();
    await page.goto('/ui/logs');
    await page.getByLabel('Email', { exact: true }).fill('viewer@a.example');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByTestId('who').textContent()).toContain('Org A');
    expect(await rowsShown(page)).toBeGreaterThan(0);
    await expectSignedOut(page);
  });

  it('says so when the password is wrong', async () => {
    const page = await open();
    opened!.problems.expect(/status of 401/);
    await page.goto('/ui/logs');
    await page.getByLabel('Email', { exact: true }).fill('viewer@a.example');
    await page.getByLabel('Password', { exact: true }).fill('not the password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('wrong');
  });

  it('lists on the sign-in page only the ways an organization permits', async () => {
    const page = await open();
    await page.goto(`/ui/sign-in?organizationId=${ORG_A}`);
    // Org A permits SSO_BROKER and EMAIL_PASSWORD (and CODE_HOST_2, not configured here).
    await page.getByRole('link', { name: 'Sign in with Test SSO' }).waitFor();
    expect(await page.getByLabel('Email', { exact: true }).count()).toBe(1);
    await page.goto('/ui/sign-in?organizationId=org-b');
    await expect.poll(() => page.getByText('No way to sign in is offered here').count()).toBe(1);
  });
});
