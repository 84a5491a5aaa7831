/**
 * Berth's public API, as the page uses it: every call carries the user's token in the Authorization header (never in
 * a URL), and every failure is the API's error object.
 */
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import type { LogQueryResult } from '../../src/core/log-query/types.js';

export type { LogQueryResult, LogRow } from '../../src/core/log-query/types.js';

export interface ApiErrorBody {
  code: string;
  message: string;
  description?: string;
  requestId?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(body.description ? `${body.message} ${body.description}` : body.message);
  }
}

export interface Caller {
  principal: { id: string; name: string; superadmin: boolean };
  key: { id: string; name?: string; organizationId?: string; expiresAt?: string };
  organizations: { id: string; name: string; role: string }[];
}

export interface CatalogLogSource {
  id: string;
  key: string;
  cloudAccountId: string;
  provider?: string;
  region: string;
  logGroup: string;
  logStreamPrefix?: string;
}

export interface CatalogDeploymentResource {
  id: string;
  type: string;
  cloudAccountId: string;
  region: string;
  supported: boolean;
  logGroups: string[];
  logStreamNames: string[];
}

export interface CatalogModuleInstance {
  id: string;
  name: string;
  logSources: CatalogLogSource[];
  deploymentResources: CatalogDeploymentResource[];
}

export interface CatalogEnvironment {
  id: string;
  name: string;
  moduleInstances: CatalogModuleInstance[];
}

export interface Catalog {
  organization: { id: string; name: string };
  projects: { id: string; name: string; environments: CatalogEnvironment[] }[];
  truncated: boolean;
}

export interface HistogramBucket {
  startMs: number;
  endMs: number;
  counts: Record<string, number>;
}

export interface HistogramResult {
  buckets: HistogramBucket[];
  partial: boolean;
  missedSources: string[];
  unsupported: string[];
}

export interface LogQueryBody {
  startTime: number;
  endTime: number;
  environmentId?: string;
  moduleInstanceIds?: string[];
  logSourceKeys?: string[];
  deploymentResourceId?: string;
  limit?: number;
  filter?: FilterNode;
}

export class Api {
  constructor(readonly token: string) {}

  get headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}` };
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
        credentials: 'omit',
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
