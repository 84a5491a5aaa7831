// Issue 20: a forged or corrupted list cursor or stream Last-Event-ID answers 400 with the error object, before any
// statement reads with it — never a 500, never `logs:upstream:failed`. The list cursors here are sealed with the
// secret the app really uses, so what is exercised is the check of their contents, not the seal.
import { createHmac } from 'node:crypto';
import type { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_TIME_MS } from '../../src/core/log-time.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { domainWorld } from '../support/domain-world.js';
import { mergeWorld, ORG_A, TOKENS } from '../support/world.js';

let t: TestApp;
let secret: string;
/** The SQL of every statement the app ran through its Kysely instance since `statements.length = 0`. */
const statements: string[] = [];

const INSTANCE = 'mi-a-empty';
const ACCOUNT = 'acct-a';
const REGION = 'eu-west-1';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);

beforeAll(async () => {
  t = await startTestApp({
    fixture: mergeWorld(domainWorld(), {
      logEvents: [
        {
          cloudAccountId: ACCOUNT,
          region: REGION,
          logGroup: '/forged',
          logStream: 's/1',
          timestamp: T0,
          message: 'only event',
        },
      ],
    }),
  });
  secret = await t.services.cursorSecret.get();
  const executor = t.store.db.getExecutor();
  const execute = executor.executeQuery.bind(executor);
  executor.executeQuery = (<R>(query: CompiledQuery<R>) => {
    statements.push(query.sql);
    return execute(query);
  }) as typeof executor.executeQuery;
});
afterAll(async () => t?.close());

const b64 = (text: string) => Buffer.from(text).toString('base64url');
const mac = (key: string, text: string) => createHmac('sha256', key).update(text).digest('base64url');

/** A cursor sealed as Berth seals one, around any payload text. */
function sealText(payloadText: string, { key = secret, prefix = '' } = {}): string {
  const payload = b64(payloadText);
  return `${payload}.${mac(key, `${prefix}${payload}`)}`;
}
const seal = (fields: unknown, options: { key?: string; prefix?: string } = {}) =>
  sealText(JSON.stringify(fields), options);

/** The key every replica used when CURSOR_SECRET was unset, before issue 20 (it was in the source). */
const OLD_DOMAIN_KEY = 'berth-domain-cursor-v1';
const OLD_API_KEY_KEY = 'berth-api-key-cursor-v1';

const listDomains = (cursor: string) =>
  t.request('GET', `/domains?moduleInstanceId=${INSTANCE}&cursor=${encodeURIComponent(cursor)}`, {
    token: TOKENS.owner,
  });
const listKeys = (cursor: string) =>
  t.request('GET', `/organizations/${ORG_A}/api-keys?cursor=${encodeURIComponent(cursor)}`, { token: TOKENS.owner });

/** A refusal: exactly the error object, and no statement of the list ran (its table is never read). */
async function expectRefused(send: () => ReturnType<typeof listDomains>, code: string, listing: RegExp): Promise<void> {
  statements.length = 0;
  const res = await send();
  expectError(res, 400, code);
  expect(typeof res.body.description).toBe('string');
  expect(statements.filter((s) => listing.test(s))).toEqual([]);
}

const DOMAIN_LIST_SQL = /from "domains"/i;
/** The key page and its count; authentication reads api_keys by token hash, which does not name the organization. */
const KEY_LIST_SQL = /to_char\(created_at|"api_keys"\."organization_id"|"organization_id" = /i;

describe('GET /domains: forged cursors', () => {
  it('accepts a cursor sealed with the secret as the cases are (the cases below differ from it in one thing)', async () => {
    statements.length = 0;
    const ok = await listDomains(seal([1, INSTANCE, 'a.example', 'd-1']));
    expect(ok.status).toBe(200);
    // The recorder sees the list's statements (so their absence below means something).
    expect(statements.filter((s) => DOMAIN_LIST_SQL.test(s)).length).toBeGreaterThan(0);
    // Astral characters are text like any other: only a lone surrogate is refused.
    expect((await listDomains(seal([1, INSTANCE, '😀.example', 'd-1']))).status).toBe(200);
  });

  const cases: [string, () => string][] = [
    ['NUL in the domain name', () => seal([1, INSTANCE, 'a\u0000.example', 'd-1'])],
    ['NUL in the id', () => seal([1, INSTANCE, 'a.example', 'd\u0000'])],
    ['NUL in the instance', () => seal([1, `${INSTANCE}\u0000`, 'a.example', 'd-1'])],
    ['a lone high surrogate', () => seal([1, INSTANCE, 'a\ud800.example', 'd-1'])],
    ['a lone low surrogate', () => seal([1, INSTANCE, 'a.example', '\udc00'])],
    ['a number for the domain name', () => seal([1, INSTANCE, 5, 'd-1'])],
    ['null for the id', () => seal([1, INSTANCE, 'a.example', null])],
    ['an object for the instance', () => seal([1, { id: INSTANCE }, 'a.example', 'd-1'])],
    ['the version as a string', () => seal(['1', INSTANCE, 'a.example', 'd-1'])],
    ['an unknown version', () => seal([2, INSTANCE, 'a.example', 'd-1'])],
    ['version 0', () => seal([0, INSTANCE, 'a.example', 'd-1'])],
    ['three fields', () => seal([1, INSTANCE, 'a.example'])],
    ['five fields', () => seal([1, INSTANCE, 'a.example', 'd-1', 'x'])],
    ['no fields', () => seal([])],
    ['an empty domain name', () => seal([1, INSTANCE, '', 'd-1'])],
    ['an empty id', () => seal([1, INSTANCE, 'a.example', ''])],
    ['a 254-character domain name', () => seal([1, INSTANCE, 'a'.repeat(254), 'd-1'])],
    ['a 129-character id', () => seal([1, INSTANCE, 'a.example', 'd'.repeat(129)])],
    ['an object', () => seal({ v: 1, moduleInstanceId: INSTANCE, domainName: 'a.example', id: 'd-1' })],
    ['a string', () => seal('a.example')],
    ['null', () => seal(null)],
    ['a payload that is not JSON', () => sealText('[1, "mi-a-empty", "a.example", "d-1"')],
    ['another instance', () => seal([1, 'mi-a-web', 'a.example', 'd-1'])],
    ['sealed with the old built-in key', () => seal([1, INSTANCE, 'a.example', 'd-1'], { key: OLD_DOMAIN_KEY })],
    ['sealed with an empty key', () => seal([1, INSTANCE, 'a.example', 'd-1'], { key: '' })],
    ['an API-key-list cursor', () => seal(['k1', INSTANCE, 'a.example', 'd-1'], { prefix: 'k1.' })],
    [
      'a MAC with its last character changed to one that decodes the same',
      () => {
        // 32 bytes leave 4 unused bits in the 43rd character: A, Q, g or w; the next one decodes the same.
        const good = seal([1, INSTANCE, 'a.example', 'd-1']);
        return `${good.slice(0, -1)}${String.fromCharCode(good.charCodeAt(good.length - 1) + 1)}`;
      },
    ],
    ['a MAC one character short', () => seal([1, INSTANCE, 'a.example', 'd-1']).slice(0, -1)],
    ['a payload with a character outside base64url', () => `*${seal([1, INSTANCE, 'a.example', 'd-1'])}`],
    ['no MAC', () => b64(JSON.stringify([1, INSTANCE, 'a.example', 'd-1']))],
    ['three parts', () => `${seal([1, INSTANCE, 'a.example', 'd-1'])}.x`],
  ];
  it.each(cases)('refuses %s with 400 domains:cursor:invalid, before any statement reads domains', async (_, make) => {
    await expectRefused(() => listDomains(make()), 'domains:cursor:invalid', DOMAIN_LIST_SQL);
  });

  it('refuses a cursor it issued once the MAC no longer matches (the list itself is unchanged)', async () => {
    const other = seal([1, INSTANCE, 'a.example', 'd-1'], { key: `${secret}x` });
    await expectRefused(() => listDomains(other), 'domains:cursor:invalid', DOMAIN_LIST_SQL);
  });
});

describe('GET /organizations/{id}/api-keys: forged cursors', () => {
  const at = '2024-01-15T12:00:00.123456Z';
  const key = (fields: unknown[], options: { key?: string; prefix?: string } = {}) =>
    seal(fields, { prefix: 'k1.', ...options });

  it('accepts a cursor sealed with the secret as the cases are (the cases below differ from it in one thing)', async () => {
    statements.length = 0;
    const ok = await listKeys(key(['k1', ORG_A, at, 'key-1']));
    expect(ok.status).toBe(200);
    expect(statements.filter((s) => KEY_LIST_SQL.test(s)).length).toBeGreaterThan(0);
    expect((await listKeys(key(['k1', ORG_A, '1970-01-01T00:00:00.000000Z', 'k']))).status).toBe(200);
    expect((await listKeys(key(['k1', ORG_A, '9999-12-31T23:59:59.999999Z', 'k']))).status).toBe(200);
    expect((await listKeys(key(['k1', ORG_A, '2024-02-29T23:59:59.000000Z', 'k']))).status).toBe(200);
  });

  const cases: [string, () => string][] = [
    ['NUL in the id', () => key(['k1', ORG_A, at, 'key\u0000'])],
    ['NUL after the time', () => key(['k1', ORG_A, `${at}\u0000`, 'key-1'])],
    ['NUL in the organization', () => key(['k1', `${ORG_A}\u0000`, at, 'key-1'])],
    ['a lone surrogate in the id', () => key(['k1', ORG_A, at, 'key\ud83d'])],
    ['a lone surrogate after the time', () => key(['k1', ORG_A, `${at}\udc00`, 'key-1'])],
    ['February 30', () => key(['k1', ORG_A, '2023-02-30T00:00:00.000000Z', 'key-1'])],
    ['February 29 of a common year', () => key(['k1', ORG_A, '2023-02-29T00:00:00.000000Z', 'key-1'])],
    ['month 13', () => key(['k1', ORG_A, '2024-13-01T00:00:00.000000Z', 'key-1'])],
    ['month 00', () => key(['k1', ORG_A, '2024-00-01T00:00:00.000000Z', 'key-1'])],
    ['day 00', () => key(['k1', ORG_A, '2024-01-00T00:00:00.000000Z', 'key-1'])],
    ['hour 24', () => key(['k1', ORG_A, '2024-01-01T24:00:00.000000Z', 'key-1'])],
    ['minute 60', () => key(['k1', ORG_A, '2024-01-01T00:60:00.000000Z', 'key-1'])],
    ['second 60', () => key(['k1', ORG_A, '2024-01-01T00:00:60.000000Z', 'key-1'])],
    ['a year past 9999', () => key(['k1', ORG_A, '10000-01-01T00:00:00.000000Z', 'key-1'])],
    ['a negative year', () => key(['k1', ORG_A, '-2024-01-01T00:00:00.000000Z', 'key-1'])],
    ['a time before 1970', () => key(['k1', ORG_A, '1969-12-31T23:59:59.999999Z', 'key-1'])],
    ['milliseconds only', () => key(['k1', ORG_A, '2024-01-01T00:00:00.000Z', 'key-1'])],
    ['an offset instead of Z', () => key(['k1', ORG_A, '2024-01-01T00:00:00.000000+00:00', 'key-1'])],
    ['NaN', () => key(['k1', ORG_A, 'NaN', 'key-1'])],
    ['infinity', () => key(['k1', ORG_A, 'infinity', 'key-1'])],
    ['epoch milliseconds', () => key(['k1', ORG_A, 1_705_320_000_000, 'key-1'])],
    ['an empty time', () => key(['k1', ORG_A, '', 'key-1'])],
    ['a number for the id', () => key(['k1', ORG_A, at, 7])],
    ['an empty id', () => key(['k1', ORG_A, at, ''])],
    ['a 129-character id', () => key(['k1', ORG_A, at, 'k'.repeat(129)])],
    ['three fields', () => key(['k1', ORG_A, at])],
    ['five fields', () => key(['k1', ORG_A, at, 'key-1', 'x'])],
    ['an unknown version', () => key(['k2', ORG_A, at, 'key-1'])],
    ['a numeric version', () => key([1, ORG_A, at, 'key-1'])],
    ['an object', () => key({ organizationId: ORG_A, createdAt: at, id: 'key-1' } as unknown as unknown[])],
    ['a payload that is not JSON', () => sealText(`["k1","${ORG_A}","${at}"`, { prefix: 'k1.' })],
    ['another organization', () => key(['k1', 'org-b', at, 'key-1'])],
    ['sealed with the old built-in key', () => key(['k1', ORG_A, at, 'key-1'], { key: OLD_API_KEY_KEY })],
    ['sealed without the version in the MAC', () => key(['k1', ORG_A, at, 'key-1'], { prefix: '' })],
    ['a domain-list cursor', () => seal([1, ORG_A, 'a.example', 'd-1'])],
  ];
  it.each(cases)('refuses %s with 400 api-keys:cursor:invalid, before any statement lists keys', async (_, make) => {
    await expectRefused(() => listKeys(make()), 'api-keys:cursor:invalid', KEY_LIST_SQL);
  });
});

describe('GET /cloud/logs/stream: forged Last-Event-ID (local account)', () => {
  const stream = (lastEventId: string, tail: boolean) =>
    t.request(
      'GET',
      `/cloud/logs/stream?accountId=${ACCOUNT}&logGroups=/forged&logStreamPrefix=s/${tail ? '&tail=true' : ''}`,
      { token: TOKENS.owner, headers: { 'last-event-id': lastEventId } },
    );
  const id = (point: unknown) => b64(JSON.stringify(point));
  const h = (extra: Record<string, unknown> = {}) => id({ v: 2, p: 'h', ts: T0, e: 'e-1', ...extra });
  const tc = (c: unknown) => id({ v: 2, p: 't', c });
  const STREAM_SQL = /log_events/i;

  it('resumes an id shaped as the cases are, and still starts over on an id that is none of its own', async () => {
    for (const lastEventId of [h(), h({ s: { x: '5', s: 0 } }), h({ future: 'field' }), 'not-an-id']) {
      statements.length = 0;
      const res = await stream(lastEventId, false);
      expect(statements.filter((s) => STREAM_SQL.test(s)).length).toBeGreaterThan(0);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.text).toContain('"isFinal":true');
      expect(res.text).not.toContain('event: error');
    }
  });

  const history: [string, string][] = [
    ['ts NaN (not JSON)', b64(`{"v":2,"p":"h","ts":NaN,"e":"e-1"}`)],
    ['ts too large to be a number', b64(`{"v":2,"p":"h","ts":1e400,"e":"e-1"}`)],
    ['a negative ts', h({ ts: -1 })],
    ['a fractional ts', h({ ts: 1.5 })],
    ['ts past 9999-12-31', h({ ts: MAX_TIME_MS + 1 })],
    ['ts as a string', h({ ts: String(T0) })],
    ['ts missing', id({ v: 2, p: 'h', e: 'e-1' })],
    ['NUL in the event id', h({ e: 'e\u0000' })],
    ['a lone surrogate in the event id', h({ e: '\ud800' })],
    ['a number for the event id', h({ e: 5 })],
    ['a 257-character event id', h({ e: 'e'.repeat(257) })],
    ['the event id missing', id({ v: 2, p: 'h', ts: T0 })],
    ['NUL in a field it does not know', h({ future: 'a\u0000' })],
    ['NUL in a key', h({ 'a\u0000': 1 })],
    ['a lone surrogate deep in a field it does not know', h({ future: [{ x: ['\udfff'] }] })],
    ['a fractional number in a field it does not know', h({ future: 0.5 })],
    ['version 0', h({ v: 0 })],
    ['version 99', h({ v: 99 })],
    ['the version as a string', h({ v: '2' })],
    ['an unknown kind', id({ v: 2, p: 'x', ts: T0, e: 'e-1' })],
    ['no kind', id({ v: 2, ts: T0, e: 'e-1' })],
    ['NUL in the switch point', h({ s: { x: '5\u0000', s: 0 } })],
    ['a negative xid in the switch point', h({ s: { x: '-1', s: 0 } })],
    ['an xid past 2^64 in the switch point', h({ s: { x: '99999999999999999999999', s: 0 } })],
    ['a string switch point', h({ s: 'x' })],
    ['a switch point of another source (aws)', h({ s: { t: T0, i: [] } })],
    ['a truncated id', h().slice(0, 20)],
    ['an id longer than 4,096 characters', `eyJ${'A'.repeat(4_100)}`],
  ];
  const tailOnly: [string, string][] = [
    ['no tail cursor', id({ v: 2, p: 't' })],
    ['a null tail cursor', tc(null)],
    ['a tail cursor from before migration 003', tc({ l: 5 })],
    ['NUL in the xid', tc({ x: '1\u0000', s: 0 })],
    ['an xid past 2^64', tc({ x: '99999999999999999999999', s: 0 })],
    ['a fractional seq', tc({ x: '1', s: 1.5 })],
    ['a negative seq', tc({ x: '1', s: -1 })],
    ['NUL in a pending transaction', tc({ x: '1', s: 0, i: ['2\u0000'] })],
    ['a malformed pending transaction', tc({ x: '1', s: 0, i: ['2:x'] })],
    ['a lone surrogate in a pending transaction', tc({ x: '1', s: 0, i: ['\ud800'] })],
    ['a tail cursor of another source (aws)', tc({ t: T0, i: ['e-1'] })],
  ];
  const cases = [
    ...history.flatMap(([name, value]): [string, string, boolean][] => [
      [`${name} (history)`, value, false],
      [`${name} (tail)`, value, true],
    ]),
    ...tailOnly.flatMap(([name, value]): [string, string, boolean][] => [
      [`${name} (history)`, value, false],
      [`${name} (tail)`, value, true],
    ]),
  ];
  it.each(cases)('refuses %s with 400 logs:stream:invalid-parameters, reading no event', async (_, value, tail) => {
    statements.length = 0;
    const res = await stream(value, tail);
    expectError(res, 400, 'logs:stream:invalid-parameters');
    expect(res.body.metadata).toEqual({ parameter: 'Last-Event-ID' });
    expect(statements.filter((s) => STREAM_SQL.test(s))).toEqual([]);
  });
});
