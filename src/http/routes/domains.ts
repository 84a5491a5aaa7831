import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses } from '../../core/schemas/common.js';
import {
  DomainPageSchema,
  ListDomainsQuery,
  NameAvailabilityQuery,
  NameAvailabilitySchema,
} from '../../core/schemas/domains.js';
import type { DomainService } from '../../services/domains/domains.js';
import type { NameAvailabilityService } from '../../services/domains/name-availability.js';

export const domainRoutes: FastifyPluginAsyncTypebox<{
  domains: DomainService;
  nameAvailability: NameAvailabilityService;
}> = async (app, { domains, nameAvailability }) => {
  app.get(
    '/domains',
    {
      schema: {
        operationId: 'listDomains',
        tags: ['domains'],
        summary: "A module instance's domains with certificate state, expected DNS records and parent wildcard",
        querystring: ListDomainsQuery,
        response: { 200: DomainPageSchema, ...errorResponses(404) },
      },
    },
    async (request) => domains.list(callerOf(request), request.query),
  );

  app.get(
    '/domains/name-availability',
    {
      schema: {
        operationId: 'checkDomainNameAvailability',
        tags: ['domains'],
        summary: 'Whether a domain name is available to the caller',
        querystring: NameAvailabilityQuery,
        response: { 200: DataOf(NameAvailabilitySchema), ...errorResponses(404) },
      },
    },
    async (request) => ({ data: await nameAvailability.check(callerOf(request), request.query) }),
  );
};
