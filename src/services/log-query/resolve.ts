import { canRead, type Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { Db } from '../../store/db.js';
import type { CloudAccount, LogTarget, StreamSelector } from '../../core/log-query/types.js';

export interface SourceSelection {
  environmentId?: string;
  moduleInstanceIds?: string[];
  logSourceKeys?: string[];
  deploymentResourceId?: string;
}

const KEY_SEPARATOR = '::';

interface InstanceRow {
  id: string;
  environment_id: string;
  organization_id: string;
}

interface SourceRow {
  module_instance_id: string;
  id: string;
  log_group: string;
  log_stream_prefix: string | null;
  region: string;
  account_id: string;
  organization_id: string;
  provider: 'local' | 'aws';
  account_region: string;
  role_arn: string | null;
  external_id: string | null;
  endpoint: string | null;
}

function accountOf(
  r: Pick<
    SourceRow,
    'account_id' | 'organization_id' | 'provider' | 'account_region' | 'role_arn' | 'external_id' | 'endpoint'
  >,
): CloudAccount {
  return {
    id: r.account_id,
    organizationId: r.organization_id,
    provider: r.provider,
    region: r.account_region,
    roleArn: r.role_arn,
    externalId: r.external_id,
    endpoint: r.endpoint,
  };
}

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
export async function resolveInstanceTargets(db: Db, caller: Caller, s: SourceSelection): Promise<LogTarget[]> {
  let instanceIds: string[] = [];
  if (s.environmentId !== undefined) {
    const env = await db
      .selectFrom('environments')
      .innerJoin('projects', 'projects.id', 'environments.project_id')
      .select(['environments.id', 'projects.organization_id'])
      .where('environments.id', '=', s.environmentId)
      .executeTakeFirst();
    if (env === undefined || !canRead(caller, env.organization_id)) {
      throw appError('logs:environment:not-found', { metadata: { environmentId: s.environmentId } });
    }
    const inEnv = await db.selectFrom('module_instances').select('id').where('environment_id', '=', env.id).execute();
    const envIds = new Set(inEnv.map((r) => r.id));
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
  const instances = await loadInstances(db, allInstanceIds);
  for (const id of allInstanceIds) {
    const inst = instances.get(id);
    if (inst === undefined || !canRead(caller, inst.organization_id)) {
      throw appError('logs:module-instance:not-found', { metadata: { moduleInstanceId: id } });
    }
    if (s.environmentId !== undefined && inst.environment_id !== s.environmentId) {
      throw appError('logs:module-instance:not-found', {
        description: 'A logSourceKeys instance must belong to the environment.',
        metadata: { moduleInstanceId: id },
      });
    }
  }

  const sources = await loadSources(db, allInstanceIds);
  const targets: LogTarget[] = [];
  const named = new Set(keys.map((k) => `${k.moduleInstanceId}${KEY_SEPARATOR}${k.logSourceId}`));
  for (const k of keys) {
    if (!sources.some((src) => src.module_instance_id === k.moduleInstanceId && src.id === k.logSourceId)) {
      throw appError('logs:log-source:not-found', {
        metadata: { logSourceKey: `${k.moduleInstanceId}${KEY_SEPARATOR}${k.logSourceId}` },
      });
    }
  }
  for (const src of sources) {
    // logSourceKeys override the instance's sources; other instances contribute all of theirs.
    const selected = keyedInstances.has(src.module_instance_id)
      ? named.has(`${src.module_instance_id}${KEY_SEPARATOR}${src.id}`)
      : instanceIds.includes(src.module_instance_id);
    if (!selected) continue;
    const streams: StreamSelector = src.log_stream_prefix
      ? { kind: 'prefix', prefix: src.log_stream_prefix }
      : { kind: 'all' };
    targets.push({
      account: accountOf(src),
      region: src.region,
      logGroup: src.log_group,
      streams,
      sourceId: src.module_instance_id,
      logSourceId: src.id,
    });
  }
  return targets;
}

async function loadInstances(db: Db, ids: string[]): Promise<Map<string, InstanceRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('module_instances')
    .innerJoin('environments', 'environments.id', 'module_instances.environment_id')
    .innerJoin('projects', 'projects.id', 'environments.project_id')
    .select(['module_instances.id', 'module_instances.environment_id', 'projects.organization_id'])
    .where('module_instances.id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * The `ui.logs` sources of the instances. A source whose cloud account belongs to another organization
 * than its instance (a seed can write one; the API cannot) is left out, as if it did not exist: reading
 * through it would hand one tenant another's logs.
 */
async function loadSources(db: Db, instanceIds: string[]): Promise<SourceRow[]> {
  if (instanceIds.length === 0) return [];
  return db
    .selectFrom('log_sources')
    .innerJoin('cloud_accounts', 'cloud_accounts.id', 'log_sources.cloud_account_id')
    .innerJoin('module_instances', 'module_instances.id', 'log_sources.module_instance_id')
    .innerJoin('environments', 'environments.id', 'module_instances.environment_id')
    .innerJoin('projects', 'projects.id', 'environments.project_id')
    .whereRef('cloud_accounts.organization_id', '=', 'projects.organization_id')
    .select([
      'log_sources.module_instance_id',
      'log_sources.id',
      'log_sources.log_group',
      'log_sources.log_stream_prefix',
      'log_sources.region',
      'cloud_accounts.id as account_id',
      'cloud_accounts.organization_id',
      'cloud_accounts.provider',
      'cloud_accounts.region as account_region',
      'cloud_accounts.role_arn',
      'cloud_accounts.external_id',
      'cloud_accounts.endpoint',
    ])
    .where('log_sources.module_instance_id', 'in', instanceIds)
    .where('log_sources.kind', '=', 'ui.logs')
    .orderBy('log_sources.module_instance_id')
    .orderBy('log_sources.id')
    .execute();
}

/** Loads a cloud account row as a CloudAccount. */
export async function loadAccount(db: Db, id: string): Promise<CloudAccount | undefined> {
  const r = await db
    .selectFrom('cloud_accounts')
    .select([
      'id as account_id',
      'organization_id',
      'provider',
      'region as account_region',
      'role_arn',
      'external_id',
      'endpoint',
    ])
    .where('id', '=', id)
    .executeTakeFirst();
  return r === undefined ? undefined : accountOf(r);
}
