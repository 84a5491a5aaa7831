import { Type } from '@sinclair/typebox';
import { IdSchema, Text } from './common.js';

const DateTime = Type.String({ format: 'date-time' });

export const DomainRecordSchema = Type.Object(
  {
    name: Type.String(),
    type: Type.String({ description: 'CNAME, A (an alias when the domain has targetZoneId) or TXT' }),
    expected: Type.String(),
    ownership: Type.String({ description: 'USER, or SERVICE when the service manages the domain' }),
    role: Type.String({ description: 'ROUTING, OWNERSHIP_VERIFICATION or CERTIFICATE_VALIDATION' }),
  },
  { title: 'DomainRecord', additionalProperties: false },
);

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
          status: Type.String({
            description: 'PENDINGVALIDATION, ISSUED, INACTIVE, EXPIRED, VALIDATIONTIMEDOUT, REVOKED or FAILED',
          }),
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

export const DomainPageSchema = Type.Object(
  {
    data: Type.Array(DomainSchema),
    meta: Type.Object(
      {
        limit: Type.Integer(),
        nextCursor: Type.Optional(Type.String({ description: 'Absent on the last page' })),
        totalCount: Type.Integer(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const ListDomainsQuery = Type.Object(
  {
    moduleInstanceId: IdSchema,
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 25 }),
    cursor: Type.Optional(Text({ minLength: 1, maxLength: 2048, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);

export const NameAvailabilityQuery = Type.Object(
  {
    name: Text({ maxLength: 4096, description: 'Any case, trailing dot and IDN allowed; `*.` for a wildcard' }),
    moduleInstanceId: Type.Optional(IdSchema),
  },
  { additionalProperties: false },
);

export const NameAvailabilitySchema = Type.Object(
  {
    available: Type.Boolean(),
    conflict: Type.Optional(
      Type.Object(
        {
          owner: Type.String({ description: 'SAME_MODULE_INSTANCE, SAME_ORGANIZATION, OTHER_ORGANIZATION or SERVICE' }),
          type: Type.String({ description: 'EXACT, WILDCARD, SUBDOMAIN or RESERVED' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { title: 'NameAvailability', additionalProperties: false },
);

export const RetryResultSchema = Type.Object(
  { certificateId: Type.String(), status: Type.String() },
  { title: 'CertificateRetryResult', additionalProperties: false },
);
