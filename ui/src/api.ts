/**
 * Berth's public API, as the page uses it: every call carries the session cookie of a signed-in person, or a pasted
 * token in the Authorization header (never in a URL); every failure is the API's error object.
 */
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import type { ErrorBody } from '../../src/core/schemas/common.js';
import type { CallerProfile } from '../../src/core/schemas/identity.js';
import type { LogCatalog } from '../../src/core/schemas/log-catalog.js';
import type { LogHistogramBucket, LogHistogramResponse } from '../../src/core/schemas/log-histogram.js';
import type { LogQueryBody as LogQueryRequest, LogQueryResponse } from '../../src/core/schemas/log-query.js';
import type { SignInMethodView } from '../../src/core/schemas/sign-in.js';

// The API's own types (`Static<>` of its schemas), imported as types only: no schema code reaches the page.
export type { CatalogDeploymentResource, CatalogLogSource } from '../../src/core/schemas/log-catalog.js';

export type ApiErrorBody = Pick<ErrorBody, 'code' | 'message' | 'description' | 'requestId' | 'action'>;
export type SignInMethod = SignInMethodView;
export type Caller = CallerProfile;
export type Catalog = LogCatalog;
export type CatalogEnvironment = Catalog['projects'][number]['environments'][number];
export type CatalogModuleInstance = CatalogEnvironment['moduleInstances'][number];
export type HistogramBucket = LogHistogramBucket;
export type HistogramResult = LogHistogramResponse;
export type LogQueryResult = LogQueryResponse;
export type LogRow = LogQueryResult['rows'][number];
/** The log query's body, its filter a filter tree (the API checks the tree itself: `parseFilter`). */
export type LogQueryBody = Omit<LogQueryRequest, 'filter'> & { filter?: FilterNode };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(body.description ? `${body.message} ${body.description}` : body.message);
  }
}

export class Api {
  /** `token`: a pasted API token; null: the session cookie a sign-in set. */
  constructor(readonly token: string | null) {}

  get headers(): Record<string, string> {
    return this.token === null ? {} : { authorization: `Bearer ${this.token}` };
  }

  /** The ways to sign in here (with an organization, those it permits). */
  methods(organizationId?: string, signal?: AbortSignal): Promise<SignInMethod[]> {
    const query = organizationId === undefined ? '' : `?organizationId=${encodeURIComponent(organizationId)}`;
    return this.call<{ data: SignInMethod[] }>('GET', `/auth/providers${query}`, undefined, signal).then((r) => r.data);
  }

  /** Whether the session cookie (if any) is a live session; never a 401. */
  hasSession(signal?: AbortSignal): Promise<boolean> {
    return this.call<{ data: unknown }>('GET', '/auth/session', undefined, signal).then((r) => r.data !== null);
  }

  /** Signs in with an email and a password: the answer sets the session cookie. */
  async passwordSignIn(email: string, password: string): Promise<void> {
    await this.call('POST', '/auth/password', { email, password });
  }

  /** Ends the session on the server and clears its cookie. */
  async signOut(): Promise<void> {
    await this.call('POST', '/auth/sign-out', undefined);
  }

  caller(signal?: AbortSignal): Promise<Caller> {
    return this.call<{ data: Caller }>('GET', '/me', undefined, signal).then((r) => r.data);
  }

  catalog(organizationId: string, signal?: AbortSignal): Promise<Catalog> {
    const path = `/organizations/${encodeURIComponent(organizationId)}/log-catalog`;
    return this.call<{ data: Catalog }>('GET', path, undefined, signal).then((r) => r.data);
  }

  query(body: LogQueryBody, signal?: AbortSignal): Promise<LogQueryResult> {
    return this.call('POST', '/cloud/logs/logs-insights', body, signal);
  }

  histogram(body: LogQueryBody & { buckets: number }, signal?: AbortSignal): Promise<HistogramResult> {
    const { limit: _limit, ...rest } = body;
    return this.call('POST', '/cloud/logs/logs-insights/histogram', rest, signal);
  }

  private async call<T>(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    const headers: Record<string, string> = { ...this.headers, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        // A pasted token goes alone; a session rides on its cookie (same origin only).
        credentials: this.token === null ? 'same-origin' : 'omit',
        cache: 'no-store',
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ApiError(0, { code: 'network', message: 'Berth could not be reached.' });
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const errorBody =
        json !== null && typeof json === 'object' && 'code' in json
          ? (json as ApiErrorBody)
          : { code: `http:${response.status}`, message: `Berth answered ${response.status}.` };
      throw new ApiError(response.status, errorBody);
    }
    return json as T;
  }
}
