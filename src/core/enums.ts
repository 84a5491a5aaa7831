import { Type, type SchemaOptions, type TLiteral, type TUnion } from '@sinclair/typebox';
import { LOG_LEVELS, type LogLevel } from './level-names.js';

/**
 * Every closed set of values Berth knows, each listed once: the values (in the order the API lists them), the
 * TypeScript type, and the TypeBox schema that routes, the fixture and the configuration validate with. SQL CHECK
 * constraints in the migrations repeat some of them; a migration is history and is not rewritten.
 */

/** A TypeBox union of string literals whose static type is the union of `values`. */
export const literalUnion = <const T extends readonly string[]>(values: T, options: SchemaOptions = {}) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  ) as unknown as TUnion<TLiteral<T[number]>[]>;

/** A member's role in an organization. */
export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export const RoleSchema = literalUnion(ROLES);
/** Roles that may change an organization's resources. */
export const WRITE_ROLES: ReadonlySet<Role> = new Set(['owner', 'admin']);

/** Where a cloud account's resources live: Berth's own store, or AWS. */
export const PROVIDER_KINDS = ['local', 'aws'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];
export const ProviderKindSchema = literalUnion(PROVIDER_KINDS);

/** The identity providers of operation 1 (docs/design.md#1-identity-providers), in the order the API lists them. */
export const IDENTITY_PROVIDERS = [
  'EMAIL_PASSWORD',
  'CODE_HOST_1',
  'CODE_HOST_2',
  'SOCIAL_1',
  'WORKFORCE_1',
  'SSO_BROKER',
] as const;
export type IdentityProvider = (typeof IDENTITY_PROVIDERS)[number];
export const IdentityProviderSchema = literalUnion(IDENTITY_PROVIDERS, { title: 'IdentityProvider' });
/** The providers an OpenID Connect issuer can stand for: every identity provider but Berth's own password. */
export const EXTERNAL_PROVIDERS = [
  'CODE_HOST_1',
  'CODE_HOST_2',
  'SOCIAL_1',
  'WORKFORCE_1',
  'SSO_BROKER',
] as const satisfies readonly IdentityProvider[];
export type ExternalProvider = (typeof EXTERNAL_PROVIDERS)[number];

/** A certificate's status: ACM's statuses without underscores (docs/design.md#5-certificate-retry). */
export const CERTIFICATE_STATUSES = [
  'PENDINGVALIDATION',
  'ISSUED',
  'INACTIVE',
  'EXPIRED',
  'VALIDATIONTIMEDOUT',
  'REVOKED',
  'FAILED',
] as const;
export type CertificateStatus = (typeof CERTIFICATE_STATUSES)[number];
export const CertificateStatusSchema = literalUnion(CERTIFICATE_STATUSES);

/** Why a domain needs a DNS record. */
export const RECORD_ROLES = ['ROUTING', 'OWNERSHIP_VERIFICATION', 'CERTIFICATE_VALIDATION'] as const;
export type RecordRole = (typeof RECORD_ROLES)[number];
export const RecordRoleSchema = literalUnion(RECORD_ROLES);

/** Who publishes a domain's DNS record. */
export const RECORD_OWNERSHIPS = ['USER', 'SERVICE'] as const;
export type RecordOwnership = (typeof RECORD_OWNERSHIPS)[number];
export const RecordOwnershipSchema = literalUnion(RECORD_OWNERSHIPS);

/** DNS record types Berth resolves to check a domain's records. */
export const DNS_RECORD_TYPES = ['TXT', 'CNAME', 'A'] as const;
export type DnsRecordType = (typeof DNS_RECORD_TYPES)[number];

/** Who holds a name that is not available, nearest first. */
export const CONFLICT_OWNERS = ['SAME_MODULE_INSTANCE', 'SAME_ORGANIZATION', 'OTHER_ORGANIZATION', 'SERVICE'] as const;
export type ConflictOwner = (typeof CONFLICT_OWNERS)[number];
export const ConflictOwnerSchema = literalUnion(CONFLICT_OWNERS);

/** How a name that is not available conflicts. */
export const CONFLICT_TYPES = ['EXACT', 'WILDCARD', 'SUBDOMAIN', 'RESERVED'] as const;
export const ConflictTypeSchema = literalUnion(CONFLICT_TYPES);

/** Levels of log events Berth reports, most to least verbose, then UNKNOWN. */
export { LOG_LEVELS, type LogLevel };
export const LogLevelSchema = literalUnion(LOG_LEVELS);

/** Levels of Berth's own log (pino's names). */
export const SERVER_LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export interface ClosedSetSchema {
  const?: unknown;
  enum?: unknown[];
  anyOf?: ClosedSetSchema[];
}

/** The values a closed set (a literal union, an enum, a const) allows; undefined for any other schema. */
export function allowedValues(schema: ClosedSetSchema): unknown[] | undefined {
  if (schema.const !== undefined) return [schema.const];
  if (Array.isArray(schema.enum)) return schema.enum;
  if (!Array.isArray(schema.anyOf)) return undefined;
  const values: unknown[] = [];
  for (const branch of schema.anyOf) {
    const more = allowedValues(branch);
    if (more === undefined) return undefined;
    values.push(...more);
  }
  return values;
}
