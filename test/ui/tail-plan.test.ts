import { describe, expect, it } from 'vitest';
import type { Catalog, CatalogLogSource } from '../../ui/src/api.js';
import { MAX_STREAMS, tailPlan } from '../../ui/src/tail-plan.js';
import { EMPTY_VIEW, type View } from '../../ui/src/view.js';

const NO_FILTER = { filterPattern: '', residual: { kind: 'all' } as const };

function source(
  instance: string,
  id: string,
  logGroup: string,
  extra: Partial<CatalogLogSource> = {},
): CatalogLogSource {
  return {
    id,
    key: `${instance}::${id}`,
    cloudAccountId: 'acct',
    provider: 'local',
    region: 'eu-west-1',
    logGroup,
    ...extra,
  };
}

/** One environment `env` whose module instances have the given sources. */
function catalog(instances: Record<string, CatalogLogSource[]>): Catalog {
  return {
    organization: { id: 'org', name: 'Org' },
    truncated: false,
    projects: [
      {
        id: 'p',
        name: 'north',
        environments: [
          {
            id: 'env',
            name: 'prod',
            moduleInstances: Object.entries(instances).map(([id, logSources]) => ({
              id,
              name: id,
              logSources,
              deploymentResources: [],
            })),
          },
        ],
      },
    ],
  };
}

const envView: View = { ...EMPTY_VIEW, environmentId: 'env' };

describe('tailPlan', () => {
  it('tails a source without a prefix by its whole log group (an empty prefix), never by stream names seen', () => {
    const plan = tailPlan(catalog({ api: [source('api', 'app', '/north/prod/api')] }), envView, NO_FILTER);
    expect(plan.groups.map((g) => g.stream)).toEqual([
      {
        accountId: 'acct',
        region: 'eu-west-1',
        logGroups: ['/north/prod/api'],
        logStreamPrefix: '',
        filterPattern: '',
      },
    ]);
    // A stream created after the tail started is the source's too.
    expect(plan.groups[0]!.attribute({ logStreamName: 'api/new-container-7' })).toEqual({
      source: expect.objectContaining({ key: 'api::app' }),
    });
  });

  it('tails a source with a prefix by its prefix, and drops streams outside it', () => {
    const plan = tailPlan(
      catalog({ worker: [source('worker', 'jobs', '/north/prod/worker', { logStreamPrefix: 'jobs/' })] }),
      envView,
      NO_FILTER,
    );
    expect(plan.groups).toHaveLength(1);
    expect(plan.groups[0]!.stream.logStreamPrefix).toBe('jobs/');
    expect(plan.groups[0]!.attribute({ logStreamName: 'jobs/9' })).toMatchObject({ source: { key: 'worker::jobs' } });
    expect(plan.groups[0]!.attribute({ logStreamName: 'cron/1' })).toBeNull();
  });

  it('labels an event by the source of its log group when sources without a prefix share a stream', () => {
    const c = catalog({
      api: [source('api', 'access', '/north/prod/api-access'), source('api', 'app', '/north/prod/api')],
    });
    const plan = tailPlan(c, envView, NO_FILTER);
    const all = plan.groups.flatMap((g) => g.stream.logGroups);
    expect(new Set(all)).toEqual(new Set(['/north/prod/api-access', '/north/prod/api']));
    // Whichever stream reads /north/prod/api, its events are the app source's, not the first source's.
    for (const g of plan.groups) {
      if (!g.stream.logGroups.includes('/north/prod/api')) continue;
      expect(g.attribute({ logGroupName: '/north/prod/api', logStreamName: 'web/1' })).toMatchObject({
        source: { key: 'api::app' },
      });
    }
    // Without the event's log group, the stream names the groups apart: one stream each, exact attribution.
    expect(plan.groups).toHaveLength(2);
    const api = plan.groups.find((g) => g.stream.logGroups[0] === '/north/prod/api')!;
    expect(api.attribute({ logStreamName: 'web/1' })).toMatchObject({ source: { key: 'api::app' } });
  });

  it('reads log groups that share a prefix with one stream when the event names its group', () => {
    const many = Object.fromEntries(
      Array.from({ length: MAX_STREAMS + 2 }, (_, i) => [`m${i}`, [source(`m${i}`, 'app', `/g/${i}`)]]),
    );
    const plan = tailPlan(catalog(many), envView, NO_FILTER);
    // More groups than streams a page opens: one stream for all, attributed by the event's log group.
    expect(plan.groups).toHaveLength(1);
    const g = plan.groups[0]!;
    expect(g.stream.logGroups).toHaveLength(MAX_STREAMS + 2);
    expect(g.attribute({ logGroupName: '/g/3', logStreamName: 'x' })).toMatchObject({ source: { key: 'm3::app' } });
    // An event that does not say its group is not guessed: both candidates are named.
    expect(g.attribute({ logStreamName: 'x' })).toEqual({ group: expect.stringContaining(' or ') });
  });

  it('gives an event of a log group with two sources to the most specific prefix', () => {
    const c = catalog({
      web: [source('web', 'all', '/g'), source('web', 'api', '/g', { logStreamPrefix: 'api/' })],
    });
    const plan = tailPlan(c, envView, NO_FILTER);
    expect(plan.groups).toHaveLength(1);
    expect(plan.groups[0]!.stream.logStreamPrefix).toBe('');
    expect(plan.groups[0]!.attribute({ logStreamName: 'api/1' })).toMatchObject({ source: { key: 'web::api' } });
    expect(plan.groups[0]!.attribute({ logStreamName: 'cron/1' })).toMatchObject({ source: { key: 'web::all' } });
  });

  it('reads only the chosen sources, and sources of other accounts or regions by streams of their own', () => {
    const c = catalog({
      a: [source('a', 'x', '/a'), source('a', 'y', '/b', { region: 'us-east-1' })],
      b: [source('b', 'z', '/c', { cloudAccountId: 'other' })],
    });
    expect(tailPlan(c, envView, NO_FILTER).groups).toHaveLength(3);
    const chosen = tailPlan(c, { ...envView, logSourceKeys: ['a::y'] }, NO_FILTER);
    expect(chosen.groups.map((g) => [g.stream.region, g.stream.logGroups])).toEqual([['us-east-1', ['/b']]]);
    expect(chosen.sources.map((s) => s.key)).toEqual(['a::y']);
  });

  it('passes the filter pattern and says when the browser applies the rest', () => {
    const plan = tailPlan(catalog({ a: [source('a', 'x', '/a')] }), envView, {
      filterPattern: '"timeout"',
      residual: { kind: 'level', levels: ['ERROR'] },
    });
    expect(plan.groups[0]!.stream.filterPattern).toBe('"timeout"');
    expect(plan.browserFiltered).toBe(true);
  });
});
