// STS (awsQuery: form-encoded POST /, Action=<Op>&Version=2011-06-15).
import { AwsError, FAKE_ACCOUNT_ID, randomId } from './core.js';
import { xmlDocument } from './xml.js';

export const STS_XMLNS = 'https://sts.amazonaws.com/doc/2011-06-15/';

export interface IssuedCredentials {
  roleArn: string;
  roleSessionName: string;
  externalId: string | undefined;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  /** Epoch ms. */
  expiration: number;
}

const ROLE_ARN_RE = /^arn:aws[\w-]*:iam::(\d{12}):role\/(?:[\w+=,.@-]+\/)*([\w+=,.@-]+)$/;

export class FakeSts {
  /** Credentials handed out by AssumeRole, oldest first. */
  readonly issued: IssuedCredentials[] = [];
  private readonly externalIds = new Map<string, string>();
  private readonly denied = new Set<string>();

  /** AssumeRole of `roleArn` then requires exactly this ExternalId (else AccessDenied). */
  requireExternalId(roleArn: string, externalId: string): void {
    this.externalIds.set(roleArn, externalId);
  }

  /** AssumeRole of `roleArn` is refused with AccessDenied. */
  denyRole(roleArn: string): void {
    this.denied.add(roleArn);
  }

  /** The AssumeRole grant an access key id came from, if any. */
  credentialsFor(accessKeyId: string | undefined): IssuedCredentials | undefined {
    return this.issued.find((c) => c.accessKeyId === accessKeyId);
  }

  decodeInput(body: string): { op: string; input: Record<string, unknown> } {
    const form = new URLSearchParams(body);
    const op = form.get('Action') ?? '';
    const input: Record<string, unknown> = {};
    for (const [k, v] of form) if (k !== 'Action' && k !== 'Version') input[k] = v;
    return { op, input };
  }

  handle(op: string, input: Record<string, unknown>, accessKeyId: string | undefined): string {
    switch (op) {
      case 'AssumeRole':
        return this.assumeRole(input, accessKeyId);
      case 'GetCallerIdentity':
        return this.getCallerIdentity(accessKeyId);
      default:
        throw new AwsError('InvalidAction', `Could not find operation ${op} for version 2011-06-15`);
    }
  }

  private assumeRole(input: Record<string, unknown>, callerKey: string | undefined): string {
    const roleArn = typeof input.RoleArn === 'string' ? input.RoleArn : '';
    const session = typeof input.RoleSessionName === 'string' ? input.RoleSessionName : '';
    const externalId = typeof input.ExternalId === 'string' ? input.ExternalId : undefined;
    const duration = typeof input.DurationSeconds === 'string' ? Number(input.DurationSeconds) : 3600;
    const m = ROLE_ARN_RE.exec(roleArn);
    if (!m) throw new AwsError('ValidationError', `${roleArn} is invalid`);
    if (!/^[\w+=,.@-]{2,64}$/.test(session)) {
      throw new AwsError(
        'ValidationError',
        `1 validation error detected: Value '${session}' at 'roleSessionName' failed to satisfy constraint`,
      );
    }
    if (!Number.isInteger(duration) || duration < 900 || duration > 43_200) {
      throw new AwsError(
        'ValidationError',
        `1 validation error detected: Value '${duration}' at 'durationSeconds' failed to satisfy constraint`,
      );
    }
    const required = this.externalIds.get(roleArn);
    if (this.denied.has(roleArn) || (required !== undefined && required !== externalId)) {
      throw new AwsError(
        'AccessDenied',
        `User: arn:aws:iam::${FAKE_ACCOUNT_ID}:user/${callerKey ?? 'anonymous'} is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`,
        403,
      );
    }
    const account = m[1] ?? FAKE_ACCOUNT_ID;
    const roleName = m[2] ?? 'role';
    const creds: IssuedCredentials = {
      roleArn,
      roleSessionName: session,
      externalId,
      accessKeyId: `ASIA${randomId(16)}`,
      secretAccessKey: randomId(40, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'),
      sessionToken: `FwoGZXIvYXdzE${randomId(120, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789')}`,
      expiration: Date.now() + duration * 1000,
    };
    this.issued.push(creds);
    const roleId = `AROA${randomId(17)}`;
    return xmlDocument('AssumeRoleResponse', STS_XMLNS, {
      AssumeRoleResult: {
        Credentials: {
          AccessKeyId: creds.accessKeyId,
          SecretAccessKey: creds.secretAccessKey,
          SessionToken: creds.sessionToken,
          Expiration: new Date(creds.expiration).toISOString(),
        },
        AssumedRoleUser: {
          AssumedRoleId: `${roleId}:${session}`,
          Arn: `arn:aws:sts::${account}:assumed-role/${roleName}/${session}`,
        },
      },
      ResponseMetadata: { RequestId: randomId(8).toLowerCase() },
    });
  }

  private getCallerIdentity(accessKeyId: string | undefined): string {
    const assumed = this.credentialsFor(accessKeyId);
    const m = assumed ? ROLE_ARN_RE.exec(assumed.roleArn) : null;
    const account = m?.[1] ?? FAKE_ACCOUNT_ID;
    const arn = assumed
      ? `arn:aws:sts::${account}:assumed-role/${m?.[2] ?? 'role'}/${assumed.roleSessionName}`
      : `arn:aws:iam::${FAKE_ACCOUNT_ID}:user/fake`;
    return xmlDocument('GetCallerIdentityResponse', STS_XMLNS, {
      GetCallerIdentityResult: {
        Arn: arn,
        UserId: assumed ? `AROA:${assumed.roleSessionName}` : 'AIDAFAKE',
        Account: account,
      },
      ResponseMetadata: { RequestId: randomId(8).toLowerCase() },
    });
  }
}
