import { ACMClient, type ACMClientConfig } from '@aws-sdk/client-acm';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { Route53Client } from '@aws-sdk/client-route-53';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { LRUCache } from 'lru-cache';

/** A cloud account of provider `aws`, as stored: everything that decides its credentials and endpoint. */
export interface AwsAccount {
  id: string;
  region: string;
  roleArn: string | null;
  externalId: string | null;
  endpoint: string | null;
}

export type AwsCredentials = Exclude<ACMClientConfig['credentials'], undefined>;
export type AwsRetryStrategy = ACMClientConfig['retryStrategy'];

export interface AwsOptions {
  /** Attempts of one call; the SDK's standard strategy retries throttling and 5xx with backoff and jitter. */
  maxAttempts: number;
  /** Upper bound on one call, retries included. */
  callTimeoutMs: number;
  /** Replaces the SDK's retry strategy (tests use short backoffs). */
  retryStrategy?: AwsRetryStrategy;
  /**
   * Credentials used as they are, or to call STS AssumeRole for accounts with a `roleArn`.
   * Default: the SDK's default provider chain. Never freeze the object: the SDK writes to it.
   */
  credentials?: AwsCredentials;
  /** SDK clients kept at most; past it the least recently used one is destroyed. */
  maxClients?: number;
}

interface Destroyable {
  destroy(): void;
}

const DEFAULT_MAX_CLIENTS = 500;
/** Route 53 is global; its API is signed for us-east-1. */
const ROUTE53_REGION = 'us-east-1';
/** Assumed-role credentials are renewed this long before they expire. */
const RENEW_BEFORE_MS = 5 * 60_000;
const SESSION_SECONDS = 3600;

/**
 * Everything about an account that shapes its clients: an account whose role, external id, region or endpoint
 * changes gets new clients and new credentials, never the ones made for its old settings.
 */
export function accountKey(account: AwsAccount): string {
  return JSON.stringify([account.id, account.roleArn, account.externalId, account.region, account.endpoint]);
}

interface TemporaryCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiration: Date;
}

/**
 * The one factory of AWS SDK clients in a process, shared by every AWS provider (certificates, DNS zones, the
 * Insights backend, the stream source). A client is made once per account settings, service and region, pointed
 * at the account's `endpoint` when it has one and signed with the account's credentials. At most `maxClients`
 * are kept; one pushed out is destroyed.
 */
export class AwsClients {
  private readonly clients: LRUCache<string, Destroyable>;
  private readonly credentials: LRUCache<string, { provider: AwsCredentials | undefined }>;
  /** Clients pushed out of the cache whose destruction waits for calls that may still use them. */
  private readonly retiring = new Map<Destroyable, NodeJS.Timeout>();

  constructor(private readonly options: AwsOptions) {
    const max = options.maxClients ?? DEFAULT_MAX_CLIENTS;
    this.clients = new LRUCache({ max, dispose: (client, _key, reason) => this.retire(client, reason) });
    this.credentials = new LRUCache({ max });
  }

  get callTimeoutMs(): number {
    return this.options.callTimeoutMs;
  }

  /** Clients held now (tests: the bound). */
  get size(): number {
    return this.clients.size;
  }

  acm(account: AwsAccount, region: string): ACMClient {
    return this.client('acm', account, region, () => new ACMClient(this.clientConfig(account, region)));
  }

  route53(account: AwsAccount): Route53Client {
    return this.client(
      'route53',
      account,
      ROUTE53_REGION,
      () => new Route53Client(this.clientConfig(account, ROUTE53_REGION)),
    );
  }

  cloudWatchLogs(account: AwsAccount, region: string): CloudWatchLogsClient {
    return this.client(
      'logs',
      account,
      region,
      () =>
        new CloudWatchLogsClient({
          ...this.clientConfig(account, region),
          // StartLiveTail's host prefix (`stream-`) would name a host that does not exist at a custom endpoint.
          ...(account.endpoint !== null ? { disableHostPrefix: true } : {}),
        }),
    );
  }

  /** STS in the account's region, signed with the account's own credentials (its role's, when it has one). */
  sts(account: AwsAccount): STSClient {
    return this.client('sts', account, account.region, () => new STSClient(this.clientConfig(account, account.region)));
  }

  /**
   * Destroys every client now. A request still running at shutdown (services close before the server has drained)
   * gets a new client, as it would before: failing it would be worse than the client it leaves behind.
   */
  close(): void {
    this.clients.clear();
    for (const [client, timer] of this.retiring) {
      clearTimeout(timer);
      client.destroy();
    }
    this.retiring.clear();
    this.credentials.clear();
  }

  private client<T extends Destroyable>(service: string, account: AwsAccount, region: string, make: () => T): T {
    const key = `${service} ${region} ${accountKey(account)}`;
    let client = this.clients.get(key) as T | undefined;
    if (client === undefined) {
      client = make();
      this.clients.set(key, client);
    }
    return client;
  }

  /**
   * A client pushed out may still be in the middle of a call (a provider holds its client for one operation):
   * it is destroyed once any call could have ended. On close, at once.
   */
  private retire(client: Destroyable, reason: LRUCache.DisposeReason): void {
    if (reason !== 'evict') {
      client.destroy();
      return;
    }
    const timer = setTimeout(() => {
      this.retiring.delete(client);
      client.destroy();
    }, this.options.callTimeoutMs);
    timer.unref();
    this.retiring.set(client, timer);
  }

  /** What every SDK client of the account shares: region, endpoint override, credentials, retries. */
  private clientConfig(account: AwsAccount, region: string) {
    return {
      region,
      ...(account.endpoint !== null ? { endpoint: account.endpoint } : {}),
      credentials: this.credentialsFor(account),
      maxAttempts: this.options.maxAttempts,
      ...(this.options.retryStrategy !== undefined ? { retryStrategy: this.options.retryStrategy } : {}),
    };
  }

  /** One credentials provider per account settings, shared by its clients in every service and region. */
  private credentialsFor(account: AwsAccount): AwsCredentials | undefined {
    const key = accountKey(account);
    let entry = this.credentials.get(key);
    if (entry === undefined) {
      const roleArn = account.roleArn;
      entry = { provider: roleArn === null ? this.options.credentials : this.assumeRole(account, roleArn) };
      this.credentials.set(key, entry);
    }
    return entry.provider;
  }

  /** Credentials of the account's role through STS AssumeRole (with its externalId), cached until near expiry. */
  private assumeRole(account: AwsAccount, roleArn: string): AwsCredentials {
    let cached: TemporaryCredentials | undefined;
    let pending: Promise<TemporaryCredentials> | undefined;
    const fetchCredentials = async (): Promise<TemporaryCredentials> => {
      const sts = new STSClient(this.clientConfig({ ...account, roleArn: null }, account.region));
      try {
        const out = await sts.send(
          new AssumeRoleCommand({
            RoleArn: roleArn,
            RoleSessionName: `berth-${account.id}`.replace(/[^\w+=,.@-]/g, '-').slice(0, 64),
            DurationSeconds: SESSION_SECONDS,
            ...(account.externalId !== null ? { ExternalId: account.externalId } : {}),
          }),
          { abortSignal: AbortSignal.timeout(this.options.callTimeoutMs) },
        );
        const c = out.Credentials;
        if (c?.AccessKeyId === undefined || c.SecretAccessKey === undefined || c.SessionToken === undefined) {
          throw new Error('STS AssumeRole answered without credentials');
        }
        return {
          accessKeyId: c.AccessKeyId,
          secretAccessKey: c.SecretAccessKey,
          sessionToken: c.SessionToken,
          expiration: c.Expiration ?? new Date(Date.now() + SESSION_SECONDS * 1000),
        };
      } finally {
        sts.destroy();
      }
    };
    return async () => {
      if (cached !== undefined && cached.expiration.getTime() - RENEW_BEFORE_MS > Date.now()) return { ...cached };
      pending ??= fetchCredentials().finally(() => {
        pending = undefined;
      });
      cached = await pending;
      return { ...cached };
    };
  }
}

/** The process's AWS client factory, from its settings (tests may override any of them). */
export function createAwsClients(
  config: { AWS_MAX_ATTEMPTS: number; AWS_CALL_TIMEOUT_MS: number },
  overrides: Partial<AwsOptions> = {},
): AwsClients {
  return new AwsClients({
    maxAttempts: config.AWS_MAX_ATTEMPTS,
    callTimeoutMs: config.AWS_CALL_TIMEOUT_MS,
    ...overrides,
  });
}
