/**
 * The error catalogue: every error Berth answers has a stable
 * `namespace:entity:reason` code and one HTTP status. `docs/errors.md` is
 * checked against this table by a test, so the two cannot drift.
 */

import type { ErrorAction, ErrorBody, ErrorDetail } from './schemas/common.js';

export type { ErrorAction, ErrorBody, ErrorDetail };

interface CatalogueEntry {
  status: number;
  message: string;
}

export const CATALOGUE = {
  'validation:request:invalid-body': { status: 400, message: 'The request body is invalid.' },
  'validation:request:invalid-query': { status: 400, message: 'The query string is invalid.' },
  'validation:request:invalid-params': { status: 400, message: 'The path parameters are invalid.' },
  'validation:request:invalid-headers': { status: 400, message: 'The request headers are invalid.' },
  'validation:request:malformed-json': { status: 400, message: 'The request body is not valid JSON.' },
  'validation:request:unsupported-media-type': { status: 415, message: 'The request body must be application/json.' },
  'validation:request:body-too-large': { status: 413, message: 'The request body is too large.' },
  'http:route:not-found': { status: 404, message: 'No such route.' },
  'ui:page:not-built': { status: 503, message: 'The log explorer page has not been built.' },
  'http:method:not-allowed': { status: 405, message: 'The method is not allowed on this route.' },
  'http:request:rate-limited': { status: 429, message: 'Too many requests.' },
  'http:request:headers-too-large': { status: 431, message: 'The request headers are too large.' },
  'http:request:malformed': { status: 400, message: 'The request is not valid HTTP/1.1.' },
  'http:request:timeout': { status: 408, message: 'The request was not received in time.' },
  'auth:token:missing': { status: 401, message: 'A bearer token is required.' },
  'auth:token:invalid': { status: 401, message: 'The bearer token is invalid, expired or revoked.' },
  'auth:permission:denied': { status: 403, message: 'You do not have permission to do this.' },
  'auth:identity-provider:not-permitted': {
    status: 403,
    message: 'This organization does not permit the way you signed in.',
  },
  'auth:sign-in:failed': { status: 401, message: 'The sign-in failed.' },
  'auth:session:invalid': { status: 401, message: 'The session has ended. Sign in again.' },
  'auth:sign-in:bad-return-to': { status: 400, message: 'returnTo must be a path on this site.' },
  'auth:sign-in:provider-not-configured': { status: 404, message: 'This way of signing in is not offered here.' },
  'auth:request:cross-origin': {
    status: 403,
    message: 'A request authenticated by a session cookie must come from this site.',
  },
  'auth:identity:not-found': { status: 404, message: 'The identity was not found.' },
  'module-categories:category:given-id-taken': { status: 409, message: 'A category with this givenId already exists.' },
  'module-categories:category:not-found': { status: 404, message: 'The module category was not found.' },
  'module-categories:organization:ambiguous': {
    status: 422,
    message: 'The organization of the new category cannot be told from the token.',
  },
  'api-keys:key:not-found': { status: 404, message: 'The API key was not found.' },
  'api-keys:principal:not-found': { status: 404, message: 'The principal was not found in this organization.' },
  'api-keys:expiry:invalid': { status: 422, message: 'The expiry of the key is invalid.' },
  'api-keys:cursor:invalid': { status: 400, message: 'The cursor is invalid.' },
  'logs:query:no-selector': { status: 422, message: 'Name the sources to query.' },
  'logs:query:conflicting-selectors': {
    status: 422,
    message: 'deploymentResourceId cannot be combined with other selectors.',
  },
  'logs:query:invalid-window': { status: 422, message: 'The time window is invalid.' },
  'logs:query:no-sources': { status: 422, message: 'The selection names no log sources.' },
  'logs:filter:invalid': { status: 400, message: 'The filter is invalid.' },
  'logs:filter:too-costly': { status: 400, message: 'The filter is too costly to evaluate.' },
  'logs:environment:not-found': { status: 404, message: 'The environment was not found.' },
  'logs:module-instance:not-found': { status: 404, message: 'The module instance was not found.' },
  'logs:log-source:not-found': { status: 404, message: 'The log source was not found.' },
  'logs:log-source-key:invalid': {
    status: 400,
    message: 'A log source key must be <moduleInstanceId>::<logSourceId>.',
  },
  'logs:deployment-resource:not-found': { status: 404, message: 'The deployment resource was not found.' },
  'logs:deployment-resource:unsupported-type': {
    status: 422,
    message: 'Logs cannot be queried for this type of deployment resource.',
  },
  'logs:deployment-resource:invalid-snapshot': {
    status: 422,
    message: 'The deployment resource snapshot does not name its log streams.',
  },
  'logs:account:not-found': { status: 404, message: 'The cloud account was not found.' },
  'logs:organization:not-found': { status: 404, message: 'The organization was not found.' },
  'logs:account:not-local': { status: 422, message: 'Events can only be ingested into a local cloud account.' },
  'logs:ingest:too-large': { status: 413, message: 'Too many events in one request.' },
  'logs:ingest:idempotency-key-reused': {
    status: 422,
    message: 'This Idempotency-Key was already used with a different request.',
  },
  'logs:ingest:idempotency-key-in-use': {
    status: 409,
    message: 'A request with this Idempotency-Key is still being processed.',
  },
  'logs:stream:invalid-parameters': { status: 400, message: 'The stream parameters are invalid.' },
  'logs:stream:too-many-streams': { status: 429, message: 'Too many concurrent log streams.' },
  'logs:stream:gap': {
    status: 503,
    message: 'The stream could not deliver every event here; resume it with Last-Event-ID.',
  },
  'logs:filter-pattern:invalid': { status: 400, message: 'The filter pattern is invalid.' },
  'logs:upstream:failed': { status: 502, message: 'The log provider failed.' },
  'domains:name:invalid': { status: 400, message: 'The domain name is invalid.' },
  'domains:module-instance:not-found': { status: 404, message: 'The module instance was not found.' },
  'domains:cursor:invalid': { status: 400, message: 'The cursor is invalid.' },
  'certificates:certificate:not-found': { status: 404, message: 'The certificate was not found.' },
  'certificates:certificate:not-pending-validation': {
    status: 409,
    message: 'Only a certificate in PENDINGVALIDATION can be retried.',
  },
  'certificates:authority:failed': { status: 502, message: 'The certificate authority failed.' },
  'certificates:dns-zone:failed': { status: 502, message: 'The DNS zone could not be updated.' },
  'internal:server:unexpected': { status: 500, message: 'An unexpected error occurred.' },
  'internal:server:unavailable': { status: 503, message: 'The service is unavailable.' },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof CATALOGUE;

export interface AppErrorOptions {
  message?: string;
  description?: string;
  /**
   * Shown to superadmins instead of `description`: it may name internal endpoints or network
   * errors, which nobody else may see (docs/design.md#errors).
   */
  internalDescription?: string;
  action?: ErrorAction;
  details?: ErrorDetail[];
  metadata?: Record<string, unknown>;
  /** Internal errors hide `metadata` from everyone but superadmins. */
  internal?: boolean;
  /** Extra response headers, e.g. Retry-After. */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly description?: string;
  readonly internalDescription?: string;
  readonly action?: ErrorAction;
  readonly details?: ErrorDetail[];
  readonly metadata?: Record<string, unknown>;
  readonly internal: boolean;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(options.message ?? CATALOGUE[code].message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = CATALOGUE[code].status;
    this.description = options.description;
    this.internalDescription = options.internalDescription;
    this.action = options.action;
    this.details = options.details;
    this.metadata = options.metadata;
    this.internal = options.internal ?? this.status >= 500;
    this.headers = options.headers;
  }
}

export function appError(code: ErrorCode, options?: AppErrorOptions): AppError {
  return new AppError(code, options);
}

/**
 * The database is unreachable, down or restarting (docs/design.md#errors: an outage, not a bug): 503, retry
 * shortly. The underlying error names hosts and ports, so only superadmins see it.
 */
export function databaseUnavailable(cause: unknown): AppError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return appError('internal:server:unavailable', {
    description: 'The database is unavailable. Retry shortly.',
    internalDescription: `The database is unavailable: ${reason}`,
    headers: { 'retry-after': '1' },
    internal: true,
    cause,
  });
}

/** A `list` detail section, the form schema failures use to name each bad field. */
export function listDetail(title: string, items: string[]): ErrorDetail {
  return { title, render: 'list', items };
}

/**
 * Renders an AppError as Berth's error object (docs/design.md#errors). Internal errors carry
 * `isInternal` and `metadata`, and any error its `internalDescription`, only when the caller is a
 * superadmin.
 */
export function renderError(error: AppError, requestId: string, superadmin: boolean): ErrorBody {
  const body: ErrorBody = { code: error.code, message: error.message };
  const description = superadmin ? (error.internalDescription ?? error.description) : error.description;
  if (description !== undefined) body.description = description;
  if (error.action !== undefined) body.action = error.action;
  if (error.details !== undefined && error.details.length > 0) body.details = error.details;
  if (error.internal) {
    if (superadmin) {
      body.isInternal = true;
      if (error.metadata !== undefined) body.metadata = error.metadata;
    }
  } else if (error.metadata !== undefined) {
    body.metadata = error.metadata;
  }
  body.requestId = requestId;
  return body;
}
