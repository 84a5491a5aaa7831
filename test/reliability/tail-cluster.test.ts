// The aws live tail across a cluster, black-box: three `berth serve` on one PostgreSQL, 300 SSE subscribers of one
// key spread over them (and a few of a second key). The cluster runs one upstream per key (the replicas' /metrics
// and the fake's open StartLiveTail sessions agree), every event reaches every subscriber exactly once (bursts,
// same-millisecond and identical events, late ingestion), a `kill -9` of a key's holder is taken over within 5 s
// with nothing lost or repeated (the killed replica's subscribers resume with Last-Event-ID elsewhere), and
// FilterLogEvents stays within the cluster-wide 5/s. Once with the PostgreSQL bus, once with Redis streams; and
// once with StartLiveTail refused (one poller per key). PostgreSQL only: a cluster needs it.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPostgres } from '../support/database.js';
import { startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';
import { AWS_ENV } from './support/faults-world.js';
import { FULL, recordSummary } from './support/summary.js';
import {
  type Cluster,
  clusterUpstreams,
  type Delivery,
  delivered,
  delivery,
  Ledger,
  maxInWindow,
  openSubscribers,
  type Replica,
  sleep,
  startCluster,
  type TailKey,
  tailMetrics,
  type TailSubscriber,
  until,
} from './support/tail-cluster-world.js';
import { reachable, TEST_REDIS_URL } from '../support/redis.js';

const SUBSCRIBERS = 300;
const SECOND_KEY_SUBSCRIBERS = 6;
const TAKEOVER_BOUND_MS = 5_000;
/** AWS_FILTER_LOG_EVENTS_PER_SECOND (default 5), all replicas together. */
const FLE_PER_SECOND = 5;
/**
 * Jitter tolerance: calls are spaced 200 ms apart by the database's clock when reserved, then reach the fake after
 * network and event-loop delays of their own, so two may arrive closer than they were reserved. A rolling window
 * counts at most 5 calls per (1 s − this), and 25 per (5 s − this); the raw 1 s and 5 s maxima are reported too.
 */
const FLE_JITTER_MS = 150;
const DELIVERY_TIMEOUT_MS = 25_000;
const REGION = 'us-east-1';
const KEYS: TailKey[] = [
  { name: 'k1', group: '/app/web', stream: 'web/1', prefix: 'web/' },
  { name: 'k2', group: '/app/api', stream: 'api/1', prefix: 'api/' },
];
const [KEY1, KEY2] = KEYS as [TailKey, TailKey];

const REDIS_URL = TEST_REDIS_URL;

const redisUp = FULL && onPostgres ? await reachable(REDIS_URL) : false;

const ENV: Record<string, string> = {
  ...AWS_ENV,
  // 300 streams of one principal and organization on a replica; the rate limit is not under test here.
  STREAM_MAX_PER_PRINCIPAL: '1000',
  STREAM_MAX_PER_ORG: '1000',
  RATE_LIMIT_MAX: '0',
  // The polling fallback asks for more than the quota (two keys every 250 ms): the quota is what limits it.
  STREAM_POLL_INTERVAL_MS: '250',
};

interface Bus {
  name: string;
  env: Record<string, string>;
  skip: boolean;
  /** Also run the StartLiveTail-refused round (once is enough: the bus does not change how the holder reads). */
  refused: boolean;
}

const BUSES: Bus[] = [
  { name: 'PostgreSQL bus', env: {}, skip: false, refused: true },
  { name: 'Redis streams bus', env: { REDIS_URL }, skip: !redisUp, refused: false },
];

const explain = (d: Delivery) =>
  `short subscribers by key@replica ${JSON.stringify(d.where)}; ${d.examples.join(' | ')}`;

/** FilterLogEvents arrivals at the fake since `since`, in rolling windows, checked against the cluster's quota. */
function expectFilterLogEventsWithinQuota(aws: FakeAws, since: number, what: string): string {
  const times = aws
    .callsTo('FilterLogEvents')
    .map((c) => c.at)
    .filter((t) => t >= since);
  const in1 = maxInWindow(times, 1_000 - FLE_JITTER_MS);
  const in5 = maxInWindow(times, 5_000 - FLE_JITTER_MS);
  const seconds = Math.max(1, (Date.now() - since) / 1000);
  const figure =
    `${times.length} FilterLogEvents calls in ${seconds.toFixed(1)} s; at most ${in1} per ${1_000 - FLE_JITTER_MS} ms ` +
    `and ${in5} per ${5_000 - FLE_JITTER_MS} ms (raw: ${maxInWindow(times, 1_000)} in any 1 s, ` +
    `${maxInWindow(times, 5_000)} in any 5 s)`;
  expect(in1, `${what}: ${figure}`).toBeLessThanOrEqual(FLE_PER_SECOND);
  expect(in5, `${what}: ${figure}`).toBeLessThanOrEqual(5 * FLE_PER_SECOND);
  return figure;
}

describe.skipIf(!FULL || !onPostgres)('the aws live tail on a cluster of three replicas', () => {
  for (const bus of BUSES) {
    describe.skipIf(bus.skip)(bus.name, () => {
      const run = randomBytes(4).toString('hex');
      const accounts = { live: `acc-tc-${run}`, refused: `acc-tc-${run}-refused` };
      let aws: FakeAws;
      let cluster: Cluster;
      let replicas: Replica[];
      let ledger: Ledger;
      let subs: TailSubscriber[] = [];
      let suiteStart = 0;

      beforeAll(async () => {
        suiteStart = Date.now();
        aws = await startFakeAws({ liveTail: { updateIntervalMs: 200 }, logUnexpectedErrors: false });
        for (const key of KEYS) aws.logs.createLogStream(key.group, key.stream);
        const fixture = mergeWorld(baseWorld(), {
          cloudAccounts: Object.values(accounts).map((id) => ({
            id,
            organizationId: ORG_A,
            provider: 'aws',
            region: REGION,
            endpoint: aws.endpoint,
          })),
        });
        cluster = await startCluster(fixture, { ...ENV, ...bus.env });
        replicas = cluster.replicas;
        ledger = new Ledger(aws, run);
      });
      afterAll(async () => {
        for (const s of subs) s.close();
        await cluster?.close();
        await aws?.close();
      });

      /**
       * Opens the key-1 subscribers (300, round robin) and key-2 ones (6) for `account`. Key 1's first subscriber
       * goes to r0 and key 2's to r1, each alone until its replica's /metrics shows it holds the key's upstream: so
       * r0 is known to hold key 1.
       */
      async function subscribeAll(account: string, mode: 'live' | 'poll'): Promise<number> {
        const startTime = Date.now();
        const params = (key: TailKey) => ({
          accountId: account,
          logGroups: key.group,
          logStreamPrefix: key.prefix,
          tail: 'true',
          startTime: String(startTime),
        });
        const [r0, r1] = replicas as [Replica, Replica];
        const opened: TailSubscriber[] = [];
        for (const [key, holder] of [
          [KEY1, r0],
          [KEY2, r1],
        ] as const) {
          opened.push(...(await openSubscribers(1, key, params(key), TOKENS.owner, () => holder)));
          await until(
            async () => (await tailMetrics(holder))[mode] === 1,
            `${holder.name} to hold ${key.name}`,
            15_000,
          );
        }
        const at = (offset: number) => (i: number) => replicas[(i + offset) % replicas.length]!;
        opened.push(...(await openSubscribers(SUBSCRIBERS - 1, KEY1, params(KEY1), TOKENS.owner, at(1))));
        opened.push(...(await openSubscribers(SECOND_KEY_SUBSCRIBERS - 1, KEY2, params(KEY2), TOKENS.owner, at(2))));
        subs = opened;
        // Every subscriber is in the tail once it has an event of its key.
        for (const key of KEYS) ledger.put(key, 'warm', 1);
        const warm = await delivered(subs, ledger, DELIVERY_TIMEOUT_MS);
        expect(warm, explain(warm)).toMatchObject({ short: 0, repeats: 0, foreign: 0, errors: 0, dropped: 0 });
        return startTime;
      }

      /** Bursts of both keys: plain ones, same-millisecond ones with an identical pair, late-ingested ones. */
      async function bursts(phase: string, more: (i: number) => boolean, gapMs: number): Promise<void> {
        const kinds = ['spread', 'same-ms', 'old'] as const;
        for (let i = 0; more(i); i++) {
          const kind = kinds[i % kinds.length]!;
          ledger.put(KEY1, `${phase}-${i}`, i % 2 === 0 ? 20 : 50, kind);
          ledger.put(KEY2, `${phase}-${i}`, 5, kind);
          await sleep(gapMs);
        }
      }

      const eventsOf = (key: TailKey) => ledger.total(key);

      it('runs one upstream per key in the cluster and delivers every event to each of 306 subscribers exactly once', async () => {
        const startTime = await subscribeAll(accounts.live, 'live');
        const upstreams = await clusterUpstreams(replicas);
        expect(upstreams, upstreams.each).toMatchObject({ live: KEYS.length, poll: 0 });
        expect(aws.liveTail.openSessions).toBe(KEYS.length);
        expect(aws.liveTail.started).toBe(KEYS.length);

        // Late-ingested events must still be after every subscriber's startTime.
        await sleep(Math.max(0, startTime + 3_500 - Date.now()));
        await bursts('steady', (i) => i < 6, 300);
        const d = await delivered(subs, ledger, DELIVERY_TIMEOUT_MS);
        expect(d, explain(d)).toMatchObject({ short: 0, missing: 0, repeats: 0, foreign: 0, errors: 0, dropped: 0 });

        const after = await clusterUpstreams(replicas);
        expect(after, after.each).toMatchObject({ live: KEYS.length, poll: 0 });
        expect(aws.liveTail.openSessions).toBe(KEYS.length);
        // No other replica ever opened a session of a key it did not hold.
        expect(aws.liveTail.started).toBe(KEYS.length);
        const fle = expectFilterLogEventsWithinQuota(aws, suiteStart, 'steady live tail');
        recordSummary({
          area: 'tail cluster',
          check: `${bus.name}: ${SUBSCRIBERS} + ${SECOND_KEY_SUBSCRIBERS} subscribers of 2 keys on 3 replicas`,
          result: `${eventsOf(KEY1)} + ${eventsOf(KEY2)} events, each delivered exactly once to every subscriber; live upstreams ${after.live} (${after.each}), StartLiveTail sessions open ${aws.liveTail.openSessions}, started ${aws.liveTail.started}; ${fle}`,
          ok: true,
        });
      });

      it("takes over a killed holder's key within 5 s; survivors and resumed subscribers miss and repeat nothing", async () => {
        const [r0, r1, r2] = replicas as [Replica, Replica, Replica];
        const survivors = [r1, r2];
        expect((await tailMetrics(r0)).live, 'r0 holds key 1').toBe(1);
        const started = aws.liveTail.started;
        const fleSince = Date.now();
        const onKilled = subs.filter((s) => s.replica === r0);
        expect(onKilled.length).toBeGreaterThan(0);

        const killedAt = Date.now();
        await cluster.kill(r0);
        // Events keep coming during the takeover and after it.
        let putting = true;
        const putter = bursts('takeover', () => putting, 400);
        let takeoverMs: number | undefined;
        let resumeMs: number;
        try {
          // The new holder: a survivor's /metrics shows both keys live, and a new StartLiveTail session is open.
          const takeover = until(
            async () => {
              const u = await clusterUpstreams(survivors);
              const open = aws.liveTail.started > started && aws.liveTail.openSessions === KEYS.length;
              if (u.live === KEYS.length && open) takeoverMs ??= Date.now() - killedAt;
              return takeoverMs !== undefined;
            },
            'a survivor to take over key 1',
            20_000,
          ).then(
            () => undefined,
            (error: unknown) => error,
          );
          // Meanwhile the killed replica's subscribers resume on the survivors with their last SSE id.
          await until(() => onKilled.every((s) => !s.connected), "the killed replica's streams to drop", 10_000);
          const resumedAt = Date.now();
          for (let i = 0; i < onKilled.length; i += 50) {
            await Promise.all(onKilled.slice(i, i + 50).map((s, j) => s.connect(survivors[(i + j) % 2]!, true)));
          }
          resumeMs = Date.now() - resumedAt;
          const failed = await takeover;
          if (failed !== undefined) throw failed;
          await sleep(1_500);
        } finally {
          putting = false;
          await putter;
        }
        await delivered(subs, ledger, DELIVERY_TIMEOUT_MS);
        const stayed = delivery(
          subs.filter((s) => !onKilled.includes(s)),
          ledger,
        );
        const resumed = delivery(onKilled, ledger);
        const u = await clusterUpstreams(survivors);
        const fle = expectFilterLogEventsWithinQuota(aws, fleSince, 'takeover');
        const exact = (d: Delivery) =>
          d.short === 0 && d.repeats === 0 && d.foreign === 0 && d.errors === 0 && d.dropped === 0;
        const figure = (d: Delivery) =>
          exact(d)
            ? 'each delivered exactly once'
            : `${d.short} subscribers short (${d.missing} deliveries missing), ${d.repeats} repeats, ${d.errors} errors, ${d.dropped} dropped`;
        recordSummary({
          area: 'tail cluster',
          check: `${bus.name}: kill -9 of key 1's holder under ${subs.length} subscribers`,
          result: `taken over in ${takeoverMs} ms (bound ${TAKEOVER_BOUND_MS} ms; ${u.each}); ${eventsOf(KEY1)} + ${eventsOf(KEY2)} events in all, to the ${stayed.subscribers} subscribers of the survivors ${figure(stayed)}; ${fle}`,
          ok: takeoverMs !== undefined && takeoverMs <= TAKEOVER_BOUND_MS && exact(stayed),
        });
        recordSummary({
          area: 'tail cluster',
          check: `${bus.name}: the killed replica's ${onKilled.length} subscribers resume on the survivors with Last-Event-ID`,
          result: `reconnected in ${resumeMs} ms; ${figure(resumed)}`,
          ok: exact(resumed),
        });
        expect.soft(takeoverMs, 'takeover time').toBeLessThanOrEqual(TAKEOVER_BOUND_MS);
        expect.soft(u, u.each).toMatchObject({ live: KEYS.length, poll: 0 });
        expect.soft(aws.liveTail.openSessions).toBe(KEYS.length);
        expect.soft(aws.liveTail.started, 'one new session: key 1 on its new holder').toBe(started + 1);
        const none = { short: 0, missing: 0, repeats: 0, foreign: 0, errors: 0, dropped: 0 };
        expect.soft(stayed, `survivors' subscribers: ${explain(stayed)}`).toMatchObject(none);
        expect.soft(resumed, `resumed subscribers: ${explain(resumed)}`).toMatchObject(none);
      });

      it('used the bus it was given', async () => {
        const client = new pg.Client({ connectionString: cluster.first.databaseUrl });
        await client.connect();
        try {
          const rows = Number((await client.query('select count(*) as n from tail_buffer')).rows[0].n);
          if (bus.env.REDIS_URL === undefined) expect(rows).toBeGreaterThan(0);
          else expect(rows).toBe(0);
        } finally {
          await client.end();
        }
      });

      it.skipIf(!bus.refused)(
        'polls FilterLogEvents once per key in the cluster where StartLiveTail is refused, within the quota, every event once',
        async () => {
          for (const s of subs) s.close();
          await until(() => aws.liveTail.openSessions === 0, 'the live sessions to close', 15_000);
          const [r0] = replicas as [Replica];
          if (r0.proc.child.exitCode !== null || r0.proc.child.signalCode !== null) await cluster.restart(r0);
          aws.failNext('StartLiveTail', { code: 'AccessDeniedException', times: 1_000 });
          const started = aws.liveTail.started;
          const since = Date.now();
          try {
            ledger = new Ledger(aws, `${run}-refused`);
            const startTime = await subscribeAll(accounts.refused, 'poll');
            await sleep(Math.max(0, startTime + 3_500 - Date.now()));
            await bursts('polled', (i) => i < 6, 300);
            const d = await delivered(subs, ledger, DELIVERY_TIMEOUT_MS);
            expect(d, explain(d)).toMatchObject({
              short: 0,
              missing: 0,
              repeats: 0,
              foreign: 0,
              errors: 0,
              dropped: 0,
            });
            const u = await clusterUpstreams(replicas);
            expect(u, u.each).toMatchObject({ live: 0, poll: KEYS.length });
            const fallbacks = (await Promise.all(replicas.map(tailMetrics))).reduce((a, m) => a + m.fallbacks, 0);
            expect(fallbacks).toBe(KEYS.length);
            expect(aws.liveTail.started).toBe(started);
            const fle = expectFilterLogEventsWithinQuota(aws, since, 'polling fallback');
            recordSummary({
              area: 'tail cluster',
              check: `${bus.name}: StartLiveTail refused, ${subs.length} subscribers of 2 keys on 3 replicas`,
              result: `pollers ${u.poll} (${u.each}), fallbacks ${fallbacks}; ${eventsOf(KEY1)} + ${eventsOf(KEY2)} events each delivered exactly once; ${fle}`,
              ok: true,
            });
          } finally {
            aws.clearFaults();
          }
        },
      );
    });
  }
});
