import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import type { Catalog, CatalogLogSource } from './api.js';
import type { TailGroup } from './lib/tail-types.js';
import type { View } from './view.js';

export interface PlannedGroup {
  stream: TailGroup;
  label: string;
  /** True when the stream reads more than the view's sources (mixed stream prefixes) and the browser narrows it. */
  browserFiltered: boolean;
  /**
   * The source a stream name belongs to; null when it belongs to none of the view's sources (the browser drops it),
   * undefined when the view has no sources to name (a deployment resource).
   */
  attribute: (streamName: string) => { sourceId: string; logSourceId: string } | null | undefined;
}

export interface TailPlan {
  groups: PlannedGroup[];
  residual: FilterNode;
  /** True when part of the filter tree is applied in the browser. */
  browserFiltered: boolean;
  /** Log groups of sources without a stream prefix: only the streams the query saw are tailed. */
  untailable: string[];
}

/** The view's sources as live-tail streams: one per (account, region). */
export function tailPlan(
  catalog: Catalog,
  view: View,
  split: { filterPattern: string; residual: FilterNode },
  /** Streams the last query saw per source key: what a source without a stream prefix is tailed by. */
  seenStreams: Map<string, Set<string>> = new Map(),
): TailPlan {
  const filterPattern = split.filterPattern;
  const base = { residual: split.residual, browserFiltered: split.residual.kind !== 'all' };
  const instances = catalog.projects.flatMap((p) =>
    p.environments.flatMap((e) => e.moduleInstances.map((m) => ({ ...m, environmentId: e.id }))),
  );
  if (view.deploymentResourceId !== undefined) {
    const r = instances.flatMap((m) => m.deploymentResources).find((x) => x.id === view.deploymentResourceId);
    if (!r?.supported || r.logStreamNames.length === 0) return { ...base, groups: [], untailable: [] };
    return {
      ...base,
      groups: [
        {
          stream: {
            accountId: r.cloudAccountId,
            region: r.region,
            logGroups: r.logGroups,
            logStreamNames: r.logStreamNames.slice(0, MAX_NAMES),
            filterPattern,
          },
          label: r.logGroups.join(', '),
          browserFiltered: false,
          attribute: () => undefined,
        },
      ],
      untailable: [],
    };
  }
  const chosen = new Set(view.logSourceKeys);
  const sources = instances
    .filter((m) => chosen.size > 0 || m.environmentId === view.environmentId)
    .flatMap((m) => m.logSources)
    .filter((s) => chosen.size === 0 || chosen.has(s.key));
  const byAccount = new Map<string, CatalogLogSource[]>();
  for (const s of sources) {
    const k = `${s.cloudAccountId}\u0000${s.region}`;
    byAccount.set(k, [...(byAccount.get(k) ?? []), s]);
  }
  const groups: PlannedGroup[] = [];
  const untailable: string[] = [];
  for (const list of byAccount.values()) {
    // The stream needs a stream prefix or names: a source with a prefix gives it; one without gives the streams
    // the query saw for it (new streams of that source are then not tailed: named in `untailable`).
    const withPrefix = list.filter((s) => (s.logStreamPrefix ?? '') !== '');
    const without = list.filter((s) => (s.logStreamPrefix ?? '') === '');
    const shared = commonPrefix(withPrefix.map((s) => s.logStreamPrefix!));
    const prefixSets = shared !== '' ? [withPrefix] : withPrefix.map((s) => [s]);
    for (const set of prefixSets) {
      const prefix = commonPrefix(set.map((s) => s.logStreamPrefix!));
      groups.push(
        group(
          set,
          { logStreamPrefix: prefix },
          set.some((s) => s.logStreamPrefix !== prefix),
        ),
      );
    }
    if (without.length > 0) {
      const names = [...new Set(without.flatMap((s) => [...(seenStreams.get(s.key) ?? [])]))].slice(0, MAX_NAMES);
      if (names.length > 0) groups.push(group(without, { logStreamNames: names }, false));
      untailable.push(...without.map((s) => s.logGroup));
    }
  }
  return { ...base, groups, untailable: [...new Set(untailable)] };

  function group(
    list: CatalogLogSource[],
    selection: Pick<TailGroup, 'logStreamPrefix' | 'logStreamNames'>,
    narrowed: boolean,
  ): PlannedGroup {
    const logGroups = [...new Set(list.map((s) => s.logGroup))];
    const names = selection.logStreamNames && new Set(selection.logStreamNames);
    return {
      stream: { accountId: list[0]!.cloudAccountId, region: list[0]!.region, logGroups, ...selection, filterPattern },
      label: logGroups.join(', '),
      browserFiltered: narrowed,
      attribute: (stream) => {
        // Events carry no log group: a stream is attributed to the first source it can belong to.
        const s = list.find((x) =>
          (x.logStreamPrefix ?? '') !== '' ? stream.startsWith(x.logStreamPrefix!) : (names?.has(stream) ?? false),
        );
        return s ? { sourceId: s.key.split('::')[0]!, logSourceId: s.id } : null;
      },
    };
  }
}

/** Stream names one stream may name (the endpoint's limit). */
const MAX_NAMES = 100;

function commonPrefix(values: string[]): string {
  if (values.length === 0) return '';
  let p = values[0]!;
  for (const v of values) while (!v.startsWith(p)) p = p.slice(0, -1);
  return p;
}
