import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses, IdSchema } from '../../core/schemas/common.js';
import { RetryResultSchema } from '../../core/schemas/domains.js';
import type { CertificateRetryService } from '../../services/domains/certificate-retry.js';

export const certificateRoutes: FastifyPluginAsyncTypebox<{ certificates: CertificateRetryService }> = async (
  app,
  { certificates },
) => {
  app.post(
    '/managed-certificates/:id/retry-validation',
    {
      schema: {
        operationId: 'retryCertificateValidation',
        tags: ['certificates'],
        summary: 'Retry DNS validation of a certificate in PENDINGVALIDATION (admin or owner)',
        params: Type.Object({ id: IdSchema }),
        response: { 200: DataOf(RetryResultSchema), ...errorResponses(403, 404, 409, 502, 503) },
      },
    },
    async (request) => ({ data: await certificates.retry(callerOf(request), request.params.id) }),
  );
};
