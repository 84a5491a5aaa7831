import type { Api, Catalog } from './api.js';

/**
 * Environments counted at most when the page picks the first view: each is one histogram request (on an aws
 * account, a Logs Insights query), so a large organization opens on one of its first environments instead.
 */
const MAX_COUNTED = 12;
const AT_ONCE = 4;
/** The first view does not wait longer than this for the counts: the busiest of those in by then is chosen. */
const DEADLINE_MS = 4_000;
const HOUR = 60 * 60_000;

/** The environments of a catalog that have log sources, in catalog order, with their project's name. */
export function environmentsWithSources(catalog: Catalog): { id: string; name: string; project: string }[] {
  return catalog.projects.flatMap((p) =>
    p.environments
      .filter((e) => e.moduleInstances.some((m) => m.logSources.length > 0))
      .map((e) => ({ id: e.id, name: e.name, project: p.name })),
  );
}

/** The id with the highest count; the first of equals (catalog order); undefined when there is none. */
export function busiest(counts: readonly { id: string; count: number | undefined }[]): string | undefined {
  let best: { id: string; count: number } | undefined;
  for (const c of counts)
    if (c.count !== undefined && (best === undefined || c.count > best.count)) best = { id: c.id, count: c.count };
  return best?.id ?? counts[0]?.id;
}

/**
 * Events of the last hour per environment (one one-bucket histogram each, a few at a time); an environment whose
 * count failed has none. The first view looks at the busiest.
 */
export async function countLastHour(
  api: Api,
  catalog: Catalog,
  signal: AbortSignal,
  now = Date.now(),
): Promise<{ id: string; count: number | undefined }[]> {
  const envs = environmentsWithSources(catalog).slice(0, MAX_COUNTED);
  const counts: { id: string; count: number | undefined }[] = envs.map((e) => ({ id: e.id, count: undefined }));
  if (envs.length < 2) return counts;
  const late = new AbortController();
  const timer = setTimeout(() => late.abort(), DEADLINE_MS);
  const stop = AbortSignal.any([signal, late.signal]);
  let next = 0;
  const worker = async () => {
    while (next < envs.length && !stop.aborted) {
      const i = next++;
      try {
        const h = await api.histogram(
          { environmentId: envs[i]!.id, startTime: now - HOUR, endTime: now, buckets: 1 },
          stop,
        );
        counts[i]!.count = h.buckets.reduce((n, b) => n + Object.values(b.counts).reduce((a, c) => a + c, 0), 0);
      } catch {
        // Not counted: another environment is chosen, or the first one.
      }
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  clearTimeout(timer);
  return counts;
}
