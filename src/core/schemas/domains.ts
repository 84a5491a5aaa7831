import { Type, type Static } from '@sinclair/typebox';
import {
  CertificateStatusSchema,
  ConflictOwnerSchema,
  ConflictTypeSchema,
  RecordOwnershipSchema,
  RecordRoleSchema,
} from '../enums.js';
import { IdSchema, PageLimit, PageOf, Text } from './common.js';

const DateTime = Type.String({ format: 'date-time' });

export const DomainRecordSchema = Type.Object(
  {
    name: Type.String(),
    type: Type.String({ description: 'CNAME, A (an alias when the domain has targetZoneId) or TXT' }),
    expected: Type.String(),
    ownership: { ...RecordOwnershipSchema, description: 'USER, or SERVICE when the service manages the domain' },
    role: RecordRoleSchema,
  },
  { title: 'DomainRecord', additionalProperties: false },
);
/** A DNS record a domain needs, and who must publish it. */
export type DomainRecord = Static<typeof DomainRecordSchema>;

export const DomainSchema = Type.Object(
  {
    id: Type.String(),
    domainName: Type.String(),
    url: Type.String(),
    verified: Type.Boolean({ description: 'The routing and ownership records resolve as expected' }),
    managedByService: Type.Boolean(),
    moduleInstanceId: Type.String(),
    records: Type.Array(DomainRecordSchema),
    certificate: Type.Optional(
      Type.Object(
        {
          arn: Type.Optional(Type.String()),
          status: CertificateStatusSchema,
          issuedAt: Type.Optional(DateTime),
          expiresAt: Type.Optional(DateTime),
        },
        { additionalProperties: false },
      ),
    ),
    parent: Type.Optional(
      Type.Object(
        {
          name: Type.String({ description: 'Name of the module instance holding the parent wildcard' }),
          projectId: Type.String(),
          environmentId: Type.String(),
          moduleInstanceId: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
    parentDomainName: Type.Optional(Type.String()),
    targetDnsName: Type.Optional(Type.String()),
    targetZoneId: Type.Optional(Type.String()),
  },
  { title: 'Domain', additionalProperties: false },
);
export type Domain = Static<typeof DomainSchema>;
export type DomainCertificate = NonNullable<Domain['certificate']>;

export const DomainPageSchema = PageOf(DomainSchema);
export type DomainPage = Static<typeof DomainPageSchema>;

export const ListDomainsQuery = Type.Object(
  {
    moduleInstanceId: IdSchema,
    limit: PageLimit(),
    cursor: Type.Optional(Text({ minLength: 1, maxLength: 2048, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type ListDomainsQuery = Static<typeof ListDomainsQuery>;

export const NameAvailabilityQuery = Type.Object(
  {
    name: Text({ maxLength: 4096, description: 'Any case, trailing dot and IDN allowed; `*.` for a wildcard' }),
    moduleInstanceId: Type.Optional(IdSchema),
  },
  { additionalProperties: false },
);
export type NameAvailabilityQuery = Static<typeof NameAvailabilityQuery>;

export const NameAvailabilitySchema = Type.Object(
  {
    available: Type.Boolean(),
    conflict: Type.Optional(
      Type.Object(
        {
          owner: ConflictOwnerSchema,
          type: ConflictTypeSchema,
        },
        { additionalProperties: false },
      ),
    ),
  },
  { title: 'NameAvailability', additionalProperties: false },
);
export type NameAvailability = Static<typeof NameAvailabilitySchema>;

export const RetryResultSchema = Type.Object(
  { certificateId: Type.String(), status: CertificateStatusSchema },
  { title: 'CertificateRetryResult', additionalProperties: false },
);
export type RetryResult = Static<typeof RetryResultSchema>;
