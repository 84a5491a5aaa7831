import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import type { Catalog, CatalogLogSource } from './api.js';
import type { TailGroup } from './lib/tail-types.js';
import type { View } from './view.js';

/** A log source of the view as the live tail sees it. */
export interface TailSource {
  /** `<moduleInstanceId>::<logSourceId>` */
  key: string;
  sourceId: string;
  logSourceId: string;
  accountId: string;
  region: string;
  logGroup: string;
  /** '' when the source is its whole log group. */
  prefix: string;
}

/** Who an event belongs to: a source of the view, or (a deployment resource) only its log groups. */
export type Attribution = { source: TailSource } | { group: string };

export interface PlannedGroup {
  stream: TailGroup;
  /** The log groups it reads, for a row no source names. */
  label: string;
  /**
   * The source an event of this stream belongs to, by its log group (`logGroupName`, when the stream sends it) and
   * its stream name; null when it belongs to none of the view's sources (the browser drops it).
   */
  attribute: (event: { logGroupName?: string; logStreamName: string }) => Attribution | null;
}

export interface TailPlan {
  groups: PlannedGroup[];
  residual: FilterNode;
  /** True when part of the filter tree is applied in the browser. */
  browserFiltered: boolean;
  /** Every source the tail reads (empty for a deployment resource). */
  sources: TailSource[];
}

/**
 * Streams a page opens at most before it merges the log groups of an account and region into one. Each is an HTTP
 * connection held open: browsers allow six per origin over HTTP/1.1 and Berth ten streams per principal.
 */
export const MAX_STREAMS = 4;

/**
 * The view's sources as live-tail streams. Sources are tailed by what they are, never by the streams a query
 * happened to see: a source with a stream prefix by its prefix, one without by its whole log group (an empty
 * `logStreamPrefix`, which also takes streams created after the tail started).
 *
 * One stream per (account, region, prefix) reads all the log groups that share the prefix. Where an event's stream
 * name alone could belong to sources of two log groups (two sources without a prefix, say), and the stream does not
 * name the event's log group, those groups get streams of their own, as long as the page stays within MAX_STREAMS.
 */
export function tailPlan(
  catalog: Catalog,
  view: View,
  split: { filterPattern: string; residual: FilterNode },
): TailPlan {
  const filterPattern = split.filterPattern;
  const base = { residual: split.residual, browserFiltered: split.residual.kind !== 'all' };
  const instances = catalog.projects.flatMap((p) =>
    p.environments.flatMap((e) => e.moduleInstances.map((m) => ({ ...m, environmentId: e.id }))),
  );
  if (view.deploymentResourceId !== undefined) {
    const r = instances.flatMap((m) => m.deploymentResources).find((x) => x.id === view.deploymentResourceId);
    if (!r?.supported || r.logStreamNames.length === 0) return { ...base, groups: [], sources: [] };
    const label = r.logGroups.join(', ');
    return {
      ...base,
      sources: [],
      groups: [
        {
          stream: {
            accountId: r.cloudAccountId,
            region: r.region,
            logGroups: r.logGroups,
            logStreamNames: r.logStreamNames.slice(0, MAX_NAMES),
            filterPattern,
          },
          label,
          attribute: (e) => ({ group: e.logGroupName ?? label }),
        },
      ],
    };
  }
  const sources = viewSources(catalog, view);
  const units = streamUnits(sources);
  const merged = mergeUnits(units, false);
  const plan = merged.some(ambiguous) ? mergeUnits(units, true) : merged;
  const groups = (plan.length <= MAX_STREAMS ? plan : merged).map((list) => planned(list, filterPattern));
  return { ...base, groups, sources };
}

/** The log sources a view means: those chosen, or else every source of its environment. */
export function viewSources(catalog: Catalog, view: View): TailSource[] {
  const chosen = new Set(view.logSourceKeys);
  const out: TailSource[] = [];
  for (const p of catalog.projects)
    for (const e of p.environments)
      for (const m of e.moduleInstances) {
        if (chosen.size === 0 && e.id !== view.environmentId) continue;
        for (const s of m.logSources) if (chosen.size === 0 || chosen.has(s.key)) out.push(tailSource(m.id, s));
      }
  return out;
}

function tailSource(moduleInstanceId: string, s: CatalogLogSource): TailSource {
  return {
    key: s.key,
    sourceId: moduleInstanceId,
    logSourceId: s.id,
    accountId: s.cloudAccountId,
    region: s.region,
    logGroup: s.logGroup,
    prefix: s.logStreamPrefix ?? '',
  };
}

/** The sources of one log group, and the prefix that reads them all ('' for the whole group). */
interface Unit {
  accountId: string;
  region: string;
  logGroup: string;
  prefix: string;
  sources: TailSource[];
}

function streamUnits(sources: TailSource[]): Unit[] {
  const byGroup = new Map<string, TailSource[]>();
  for (const s of sources) {
    const k = JSON.stringify([s.accountId, s.region, s.logGroup]);
    byGroup.set(k, [...(byGroup.get(k) ?? []), s]);
  }
  return [...byGroup.values()].map((list) => ({
    accountId: list[0]!.accountId,
    region: list[0]!.region,
    logGroup: list[0]!.logGroup,
    prefix: commonPrefix(list.map((s) => s.prefix)),
    sources: list,
  }));
}

/** Units read by one stream: same account, region and prefix; with `apart`, a unit that would be ambiguous alone. */
function mergeUnits(units: Unit[], apart: boolean): Unit[][] {
  const out = new Map<string, Unit[]>();
  for (const u of units) {
    const k = JSON.stringify([u.accountId, u.region, u.prefix, apart && claimsShared(u, units) ? u.logGroup : '']);
    out.set(k, [...(out.get(k) ?? []), u]);
  }
  return [...out.values()];
}

/** True when a stream name of `u` could also be one of another log group's source read by the same stream. */
function claimsShared(u: Unit, units: Unit[]): boolean {
  return units.some(
    (v) =>
      v !== u &&
      v.accountId === u.accountId &&
      v.region === u.region &&
      v.prefix === u.prefix &&
      u.sources.some((a) => v.sources.some((b) => a.prefix.startsWith(b.prefix) || b.prefix.startsWith(a.prefix))),
  );
}

function ambiguous(list: Unit[]): boolean {
  return list.some((u) => claimsShared(u, list));
}

function planned(list: Unit[], filterPattern: string): PlannedGroup {
  const logGroups = list.map((u) => u.logGroup);
  const sources = list.flatMap((u) => u.sources);
  const label = logGroups.join(', ');
  return {
    stream: {
      accountId: list[0]!.accountId,
      region: list[0]!.region,
      logGroups,
      logStreamPrefix: list[0]!.prefix,
      filterPattern,
    },
    label,
    attribute: (e) => {
      const group = e.logGroupName ?? (logGroups.length === 1 ? logGroups[0] : undefined);
      const candidates = sources.filter(
        (s) => (group === undefined || s.logGroup === group) && e.logStreamName.startsWith(s.prefix),
      );
      if (candidates.length === 0) return null;
      // The most specific source: the longest prefix that the stream name starts with.
      const longest = Math.max(...candidates.map((s) => s.prefix.length));
      const best = candidates.filter((s) => s.prefix.length === longest);
      const groups = new Set(best.map((s) => s.logGroup));
      // Two log groups could own the event and the stream did not say which: name both rather than guess.
      return groups.size === 1 ? { source: best[0]! } : { group: [...groups].join(' or ') };
    },
  };
}

/** Stream names one stream may name (the endpoint's limit). */
const MAX_NAMES = 100;

export function commonPrefix(values: string[]): string {
  if (values.length === 0) return '';
  let p = values[0]!;
  for (const v of values) while (!v.startsWith(p)) p = p.slice(0, -1);
  return p;
}
