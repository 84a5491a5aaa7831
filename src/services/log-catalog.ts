import { canRead, type Caller } from '../core/caller.js';
import { AppError, appError } from '../core/errors.js';
import {
  LOG_CATALOG_LIMITS,
  type CatalogDeploymentResource,
  type CatalogLogSource,
  type LogCatalog,
  type LogCatalogLimits,
} from '../core/schemas/log-catalog.js';
import type { Db } from '../store/db.js';
import {
  type CatalogResourceRow,
  findOrganizationName,
  listCatalogInstances,
  listCatalogLogSources,
  listCatalogResources,
} from '../store/repositories/log-catalog.js';
import { deploymentResourceStreams, SUPPORTED_RESOURCE_TYPES } from './log-query/deployment-resource.js';

type Project = LogCatalog['projects'][number];
type Environment = Project['environments'][number];
type ModuleInstance = Environment['moduleInstances'][number];

/**
 * What a caller can look at in one organization: `GET /organizations/{id}/log-catalog`. Four bounded statements
 * in two round trips; each list is cut at its limit, in the order of the tree, and the answer says so.
 */
export class LogCatalogService {
  constructor(
    private readonly db: Db,
    private readonly limits: LogCatalogLimits = LOG_CATALOG_LIMITS,
  ) {}

  async catalog(caller: Caller, organizationId: string): Promise<LogCatalog> {
    // An organization the key cannot read answers like one that does not exist, before any lookup
    // (docs/design.md#identity-tokens-and-permissions).
    const notFound = () => appError('logs:organization:not-found', { metadata: { organizationId } });
    if (!canRead(caller, organizationId)) throw notFound();
    const { limits } = this;
    const [organization, instances] = await Promise.all([
      findOrganizationName(this.db, organizationId),
      listCatalogInstances(this.db, organizationId, limits.moduleInstances + 1),
    ]);
    if (organization === undefined) throw notFound();
    const kept = instances.slice(0, limits.moduleInstances);
    const ids = kept.map((i) => i.id);
    const [sources, resources] = await Promise.all([
      listCatalogLogSources(this.db, organizationId, ids, limits.logSources + 1),
      listCatalogResources(this.db, organizationId, ids, limits.deploymentResources + 1),
    ]);
    const truncated =
      instances.length > limits.moduleInstances ||
      sources.length > limits.logSources ||
      resources.length > limits.deploymentResources;

    // Rows come in tree order: consecutive rows of one project (environment) belong together.
    const projects: Project[] = [];
    const byInstance = new Map<string, ModuleInstance>();
    for (const row of kept) {
      let project = projects.at(-1);
      if (project?.id !== row.projectId) {
        project = { id: row.projectId, name: row.projectName, environments: [] };
        projects.push(project);
      }
      let environment = project.environments.at(-1);
      if (environment?.id !== row.environmentId) {
        environment = { id: row.environmentId, name: row.environmentName, moduleInstances: [] };
        project.environments.push(environment);
      }
      const instance: ModuleInstance = { id: row.id, name: row.name, logSources: [], deploymentResources: [] };
      environment.moduleInstances.push(instance);
      byInstance.set(row.id, instance);
    }
    for (const s of sources.slice(0, limits.logSources)) {
      const source: CatalogLogSource = {
        id: s.id,
        key: `${s.moduleInstanceId}::${s.id}`,
        cloudAccountId: s.cloudAccountId,
        provider: s.provider,
        region: s.region,
        logGroup: s.logGroup,
        ...(s.logStreamPrefix ? { logStreamPrefix: s.logStreamPrefix } : {}),
      };
      byInstance.get(s.moduleInstanceId)?.logSources.push(source);
    }
    for (const r of resources.slice(0, limits.deploymentResources)) {
      byInstance.get(r.moduleInstanceId)?.deploymentResources.push(catalogResource(r));
    }
    return { organization: { id: organization.id, name: organization.name }, projects, truncated };
  }
}

/** A resource with what the log query would read for it (the query's own derivation), or `supported: false`. */
function catalogResource(r: CatalogResourceRow): CatalogDeploymentResource {
  const base = { id: r.id, type: r.type, cloudAccountId: r.cloudAccountId, region: r.region };
  const unsupported = { ...base, supported: false, logGroups: [], logStreamNames: [] };
  if (!(SUPPORTED_RESOURCE_TYPES as readonly string[]).includes(r.type)) return unsupported;
  try {
    const groups = deploymentResourceStreams(r);
    return {
      ...base,
      supported: true,
      logGroups: [...new Set(groups.map((g) => g.logGroup))],
      logStreamNames: [...new Set(groups.flatMap((g) => g.names))],
    };
  } catch (error) {
    // A snapshot that names no stream: the query answers 422 logs:deployment-resource:invalid-snapshot.
    if (error instanceof AppError && error.code === 'logs:deployment-resource:invalid-snapshot') return unsupported;
    throw error;
  }
}
