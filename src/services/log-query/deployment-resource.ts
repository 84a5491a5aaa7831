import { canRead, type Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { LogTarget } from '../../core/log-query/types.js';
import type { Db } from '../../store/db.js';
import { findCloudAccount } from '../../store/repositories/cloud-accounts.js';
import { findDeploymentResource } from '../../store/repositories/deployment-resources.js';
import { storeTenancy, type Tenancy } from '../../store/tenancy.js';

export const SUPPORTED_RESOURCE_TYPES = ['ecs-task', 'ec2-instance'] as const;

interface ContainerDefinition {
  name?: unknown;
  logConfiguration?: { logDriver?: unknown; options?: Record<string, unknown> };
}

const invalid = (id: string, why: string) =>
  appError('logs:deployment-resource:invalid-snapshot', { description: why, metadata: { deploymentResourceId: id } });

const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/**
 * ECS task: one target per container that logs with awslogs, its exact
 * stream `<prefix>/<container>/<taskId>` (the awslogs driver's naming).
 */
export function ecsTaskStreams(
  id: string,
  snapshot: Record<string, unknown>,
): { logGroup: string; stream: string; region?: string }[] {
  const taskArn = snapshot.taskArn;
  if (!str(taskArn)) throw invalid(id, 'The task snapshot has no taskArn.');
  const taskId = taskArn.slice(taskArn.lastIndexOf('/') + 1);
  const defs = Array.isArray(snapshot.containerDefinitions)
    ? (snapshot.containerDefinitions as ContainerDefinition[])
    : [];
  const out: { logGroup: string; stream: string; region?: string }[] = [];
  for (const def of defs) {
    const options = def.logConfiguration?.options ?? {};
    const group = options['awslogs-group'];
    const prefix = options['awslogs-stream-prefix'];
    if (!str(def.name) || !str(group) || !str(prefix)) continue;
    const region = options['awslogs-region'];
    out.push({ logGroup: group, stream: `${prefix}/${def.name}/${taskId}`, ...(str(region) ? { region } : {}) });
  }
  if (out.length === 0) throw invalid(id, 'No container of the task logs through awslogs with a stream prefix.');
  return out;
}

/** EC2 instance: the deploy's log group, both stream families of every release that ran on it. */
export function ec2InstanceStreams(
  id: string,
  snapshot: Record<string, unknown>,
): { logGroup: string; streams: string[] } {
  const { instanceId, logGroup, releases } = snapshot;
  if (!str(instanceId) || !str(logGroup)) throw invalid(id, 'The instance snapshot needs instanceId and logGroup.');
  const ids = (Array.isArray(releases) ? releases : []).map((r) => (r as { id?: unknown }).id).filter(str);
  const streams = ids.flatMap((rel) => [`releases/${rel}/${instanceId}/app`, `releases/${rel}/${instanceId}/deploy`]);
  return { logGroup, streams };
}

/** Selector rules 3–6: the targets of everything one deployment resource logged. */
export async function resolveDeploymentResourceTargets(
  db: Db,
  caller: Caller,
  id: string,
  tenancy: Tenancy = storeTenancy(db),
): Promise<LogTarget[]> {
  const resource = await findDeploymentResource(db, id);
  const organizationId = resource === undefined ? undefined : await tenancy.moduleInstance(resource.moduleInstanceId);
  if (resource === undefined || organizationId === undefined || !canRead(caller, organizationId)) {
    throw appError('logs:deployment-resource:not-found', { metadata: { deploymentResourceId: id } });
  }
  if (!(SUPPORTED_RESOURCE_TYPES as readonly string[]).includes(resource.type)) {
    throw appError('logs:deployment-resource:unsupported-type', {
      description: `Logs can be queried for ${SUPPORTED_RESOURCE_TYPES.join(' and ')} resources; this one is ${resource.type}.`,
      metadata: { deploymentResourceId: id, type: resource.type, supportedTypes: [...SUPPORTED_RESOURCE_TYPES] },
    });
  }
  // A resource reading through another organization's account has no owner under the tenancy rule:
  // its account answers like a missing one.
  const account =
    (await tenancy.deploymentResource(id)) === organizationId
      ? await findCloudAccount(db, resource.cloudAccountId)
      : undefined;
  if (account === undefined) throw appError('logs:account:not-found');
  const snapshot = (resource.snapshot ?? {}) as Record<string, unknown>;
  const base = { account, sourceId: '', logSourceId: '' };
  if (resource.type === 'ecs-task') {
    // Containers sharing a group are one target with every stream name.
    const byGroup = new Map<string, { region: string; names: string[] }>();
    for (const s of ecsTaskStreams(id, snapshot)) {
      const region = s.region ?? resource.region;
      const key = `${region}\u0000${s.logGroup}`;
      const entry = byGroup.get(key) ?? { region, names: [] };
      entry.names.push(s.stream);
      byGroup.set(key, entry);
    }
    return [...byGroup].map(([key, v]) => ({
      ...base,
      region: v.region,
      logGroup: key.slice(key.indexOf('\u0000') + 1),
      streams: { kind: 'names', names: v.names },
    }));
  }
  const { logGroup, streams } = ec2InstanceStreams(id, snapshot);
  return [{ ...base, region: resource.region, logGroup, streams: { kind: 'names', names: streams } }];
}
