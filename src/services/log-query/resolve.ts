import { canRead, type Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { LogTarget, StreamSelector } from '../../core/log-query/types.js';
import type { Db } from '../../store/db.js';
import { listLogSourcesOfInstances } from '../../store/repositories/log-sources.js';
import { storeTenancy, type Tenancy } from '../../store/tenancy.js';
import type { LogSourceCatalog } from '../caches/cached-log-sources.js';

export interface SourceSelection {
  environmentId?: string;
  moduleInstanceIds?: string[];
  logSourceKeys?: string[];
  deploymentResourceId?: string;
}

const KEY_SEPARATOR = '::';

/** Checks selector rules 1 and 2 (422s of their own). */
export function checkSelectorRules(s: SourceSelection): void {
  const has = {
    environment: s.environmentId !== undefined,
    instances: s.moduleInstanceIds !== undefined && s.moduleInstanceIds.length > 0,
    keys: s.logSourceKeys !== undefined && s.logSourceKeys.length > 0,
    resource: s.deploymentResourceId !== undefined,
  };
  if (!has.environment && !has.instances && !has.keys && !has.resource) {
    throw appError('logs:query:no-selector', {
      description: 'Give environmentId, moduleInstanceIds, logSourceKeys or deploymentResourceId.',
    });
  }
  if (has.resource && (has.environment || has.instances || has.keys)) {
    throw appError('logs:query:conflicting-selectors', {
      description:
        'deploymentResourceId scopes the query by itself: send it without environmentId, moduleInstanceIds and logSourceKeys.',
    });
  }
}

export function parseLogSourceKey(key: string, index: number): { moduleInstanceId: string; logSourceId: string } {
  const at = key.indexOf(KEY_SEPARATOR);
  const moduleInstanceId = at < 0 ? '' : key.slice(0, at);
  const logSourceId = at < 0 ? '' : key.slice(at + KEY_SEPARATOR.length);
  if (moduleInstanceId === '' || logSourceId === '' || logSourceId.includes(KEY_SEPARATOR)) {
    throw appError('logs:log-source-key:invalid', { metadata: { index, key } });
  }
  return { moduleInstanceId, logSourceId };
}

/**
 * Turns the module-instance selectors into targets: environment → its
 * instances; `moduleInstanceIds` narrows (or, alone, selects); `logSourceKeys`
 * overrides the sources of the instances they name. Everything named must
 * exist and be visible to the caller; another organization's resources
 * answer like missing ones.
 */
export async function resolveInstanceTargets(
  db: Db,
  caller: Caller,
  s: SourceSelection,
  tenancy: Tenancy = storeTenancy(db),
  logSources: LogSourceCatalog = (ids, kind) => listLogSourcesOfInstances(db, ids, kind),
): Promise<LogTarget[]> {
  let instanceIds: string[] = [];
  let envIds: Set<string> | undefined;
  if (s.environmentId !== undefined) {
    const organizationId = await tenancy.environment(s.environmentId);
    if (organizationId === undefined || !canRead(caller, organizationId)) {
      throw appError('logs:environment:not-found', { metadata: { environmentId: s.environmentId } });
    }
    envIds = new Set(await tenancy.instancesOfEnvironment(s.environmentId));
    if (s.moduleInstanceIds !== undefined && s.moduleInstanceIds.length > 0) {
      for (const id of s.moduleInstanceIds) {
        if (!envIds.has(id)) {
          throw appError('logs:module-instance:not-found', {
            description: 'Every moduleInstanceId must be an instance of the environment.',
            metadata: { moduleInstanceId: id },
          });
        }
      }
      instanceIds = [...new Set(s.moduleInstanceIds)];
    } else {
      instanceIds = [...envIds];
    }
  } else if (s.moduleInstanceIds !== undefined) {
    instanceIds = [...new Set(s.moduleInstanceIds)];
  }

  const keys = (s.logSourceKeys ?? []).map(parseLogSourceKey);
  const keyedInstances = new Set(keys.map((k) => k.moduleInstanceId));
  const allInstanceIds = [...new Set([...instanceIds, ...keyedInstances])];
  const owners = await tenancy.moduleInstances(allInstanceIds);
  for (const id of allInstanceIds) {
    const organizationId = owners.get(id);
    if (organizationId === undefined || !canRead(caller, organizationId)) {
      throw appError('logs:module-instance:not-found', { metadata: { moduleInstanceId: id } });
    }
    if (envIds !== undefined && !envIds.has(id)) {
      throw appError('logs:module-instance:not-found', {
        description: 'A logSourceKeys instance must belong to the environment.',
        metadata: { moduleInstanceId: id },
      });
    }
  }

  const sources = await logSources(allInstanceIds, 'ui.logs');
  const targets: LogTarget[] = [];
  const named = new Set(keys.map((k) => `${k.moduleInstanceId}${KEY_SEPARATOR}${k.logSourceId}`));
  for (const k of keys) {
    if (!sources.some((src) => src.moduleInstanceId === k.moduleInstanceId && src.id === k.logSourceId)) {
      throw appError('logs:log-source:not-found', {
        metadata: { logSourceKey: `${k.moduleInstanceId}${KEY_SEPARATOR}${k.logSourceId}` },
      });
    }
  }
  for (const src of sources) {
    // logSourceKeys override the instance's sources; other instances contribute all of theirs.
    const selected = keyedInstances.has(src.moduleInstanceId)
      ? named.has(`${src.moduleInstanceId}${KEY_SEPARATOR}${src.id}`)
      : instanceIds.includes(src.moduleInstanceId);
    if (!selected) continue;
    const streams: StreamSelector = src.logStreamPrefix
      ? { kind: 'prefix', prefix: src.logStreamPrefix }
      : { kind: 'all' };
    targets.push({
      account: src.account,
      region: src.region,
      logGroup: src.logGroup,
      streams,
      sourceId: src.moduleInstanceId,
      logSourceId: src.id,
    });
  }
  return targets;
}
