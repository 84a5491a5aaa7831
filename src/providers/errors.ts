import type { ProviderKind } from '../core/enums.js';

export type { ProviderKind };

export type ProviderService = 'certificate-authority' | 'dns-zone';

export interface ProviderErrorDetails {
  /** The provider operation that failed, e.g. `DescribeCertificate`. */
  operation: string;
  /** AWS error code (`ThrottlingException`, `AccessDenied`, …) when AWS answered one. */
  awsCode?: string;
  httpStatus?: number;
  awsRequestId?: string;
}

/**
 * A certificate authority or DNS zone could not do what was asked. Services turn it into a 502
 * of the `certificates:` namespace; it never reaches the client as is.
 */
export class ProviderError extends Error {
  constructor(
    readonly service: ProviderService,
    readonly provider: ProviderKind,
    message: string,
    readonly details: ProviderErrorDetails,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderError';
  }
}

interface SdkErrorShape {
  name?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown; requestId?: unknown; attempts?: unknown };
}

/** Wraps whatever an AWS SDK call threw (service error, timeout, network failure) in a ProviderError. */
export function awsFailure(service: ProviderService, operation: string, error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorShape;
  const name = typeof e.name === 'string' ? e.name : 'Error';
  const message = typeof e.message === 'string' ? e.message : String(error);
  const details: ProviderErrorDetails = { operation };
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === 'number') {
    details.httpStatus = status;
    details.awsCode = name;
  }
  if (typeof e.$metadata?.requestId === 'string') details.awsRequestId = e.$metadata.requestId;
  const attempts =
    typeof e.$metadata?.attempts === 'number' && e.$metadata.attempts > 1
      ? ` after ${e.$metadata.attempts} attempts`
      : '';
  const text =
    name === 'AbortError' || name === 'TimeoutError'
      ? `AWS ${operation} did not answer in time`
      : details.awsCode !== undefined
        ? `AWS ${operation} failed${attempts}: ${details.awsCode}: ${message}`
        : `AWS ${operation} could not be reached: ${message}`;
  return new ProviderError(service, 'aws', text, details, { cause: error });
}

const SERVICE_NAMES: Record<ProviderService, string> = {
  'certificate-authority': 'certificate authority',
  'dns-zone': 'DNS zone',
};

/**
 * What a caller other than a superadmin may read about a ProviderError. Built only from the
 * operation and AWS's error code: a message, from AWS or the network stack, may name an internal
 * endpoint ("connect ECONNREFUSED 10.0.0.7:443"), which docs/design.md#errors keeps from them.
 */
export function publicDescription(error: ProviderError): string {
  const { operation, awsCode } = error.details;
  if (error.provider === 'aws' && awsCode !== undefined) return `AWS ${operation} failed: ${awsCode}.`;
  return `The ${error.provider === 'aws' ? 'AWS' : 'local'} ${SERVICE_NAMES[error.service]} failed during ${operation}.`;
}
