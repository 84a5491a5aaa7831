import { Type, type Static } from '@sinclair/typebox';
import { ProviderKindSchema } from '../enums.js';

/** At most this many module instances, log sources and deployment resources in one catalog answer. */
export const LOG_CATALOG_LIMITS = { moduleInstances: 500, logSources: 2_000, deploymentResources: 2_000 } as const;
export type LogCatalogLimits = { [K in keyof typeof LOG_CATALOG_LIMITS]: number };

const Named = { id: Type.String(), name: Type.String() };

const CatalogLogSourceSchema = Type.Object(
  {
    id: Type.String(),
    key: Type.String({
      description: '`<moduleInstanceId>::<logSourceId>`, as the log query takes it in logSourceKeys',
    }),
    cloudAccountId: Type.String(),
    provider: ProviderKindSchema,
    region: Type.String(),
    logGroup: Type.String(),
    logStreamPrefix: Type.Optional(Type.String()),
  },
  { title: 'CatalogLogSource', additionalProperties: false },
);

const CatalogDeploymentResourceSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    cloudAccountId: Type.String(),
    region: Type.String(),
    supported: Type.Boolean({
      description:
        'Whether the log query can read it (deploymentResourceId): a supported type (ecs-task, ec2-instance) whose ' +
        'snapshot names its log streams. When false, logGroups and logStreamNames are empty',
    }),
    logGroups: Type.Array(Type.String(), { description: 'The log groups the log query reads for this resource' }),
    logStreamNames: Type.Array(Type.String(), { description: 'The exact stream names it reads in them' }),
  },
  { title: 'CatalogDeploymentResource', additionalProperties: false },
);

export const LogCatalogSchema = Type.Object(
  {
    organization: Type.Object(Named, { additionalProperties: false }),
    projects: Type.Array(
      Type.Object(
        {
          ...Named,
          environments: Type.Array(
            Type.Object(
              {
                ...Named,
                moduleInstances: Type.Array(
                  Type.Object(
                    {
                      ...Named,
                      logSources: Type.Array(CatalogLogSourceSchema),
                      deploymentResources: Type.Array(CatalogDeploymentResourceSchema),
                    },
                    { additionalProperties: false },
                  ),
                ),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    truncated: Type.Boolean({
      description:
        `True when the answer was cut: at most ${LOG_CATALOG_LIMITS.moduleInstances} module instances, ` +
        `${LOG_CATALOG_LIMITS.logSources} log sources and ${LOG_CATALOG_LIMITS.deploymentResources} deployment ` +
        'resources are listed, the first ones in the order of the tree',
    }),
  },
  { title: 'LogCatalog', additionalProperties: false },
);
export type LogCatalog = Static<typeof LogCatalogSchema>;
export type CatalogLogSource = Static<typeof CatalogLogSourceSchema>;
export type CatalogDeploymentResource = Static<typeof CatalogDeploymentResourceSchema>;
