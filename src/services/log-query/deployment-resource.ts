import { canRead, type Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { LogTarget } from '../../core/log-query/types.js';
import type { Db } from '../../store/db.js';
import { findCloudAccount } from '../../store/repositories/cloud-accounts.js';
import { type DeploymentResourceRow, findDeploymentResource } from '../../store/repositories/deployment-resources.js';
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
  const base = { account, sourceId: '', logSourceId: '' };
  return deploymentResourceStreams(resource).map(
    (g): LogTarget => ({
      ...base,
      region: g.region,
      logGroup: g.logGroup,
      streams: { kind: 'names', names: g.names },
    }),
  );
}

/** The exact streams one log group of a deployment resource holds. */
export interface ResourceLogGroup {
  region: string;
  logGroup: string;
  names: string[];
}

/**
 * What the log query reads for a resource of a supported type (`ecs-task` or `ec2-instance`): per region and
 * log group, the exact stream names its snapshot derives (the log catalog shows the same). Throws
 * `logs:deployment-resource:invalid-snapshot` when the snapshot names none.
 */
export function deploymentResourceStreams(
  resource: Pick<DeploymentResourceRow, 'id' | 'type' | 'region' | 'snapshot'>,
): ResourceLogGroup[] {
  const { id } = resource;
  const snapshot = (resource.snapshot ?? {}) as Record<string, unknown>;
  if (resource.type === 'ecs-task') {
    // Containers sharing a group are one target with every stream name.
    const byGroup = new Map<string, ResourceLogGroup>();
    for (const s of ecsTaskStreams(id, snapshot)) {
      const region = s.region ?? resource.region;
      const key = `${region}\u0000${s.logGroup}`;
      const entry = byGroup.get(key) ?? { region, logGroup: s.logGroup, names: [] };
      entry.names.push(s.stream);
      byGroup.set(key, entry);
    }
    return [...byGroup.values()];
  }
  const { logGroup, streams } = ec2InstanceStreams(id, snapshot);
  return [{ region: resource.region, logGroup, names: streams }];
}
