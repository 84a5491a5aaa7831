// Drives the fake AWS endpoint through the real AWS SDK v3 clients.
import {
  ACMClient,
  DescribeCertificateCommand,
  InvalidArnException,
  ListCertificatesCommand,
  RequestCertificateCommand,
  ResourceNotFoundException as AcmResourceNotFoundException,
} from '@aws-sdk/client-acm';
import {
  CloudWatchLogsClient,
  CloudWatchLogsServiceException,
  DescribeLogGroupsCommand,
  FilterLogEventsCommand,
  type FilterLogEventsCommandOutput,
  GetQueryResultsCommand,
  InvalidParameterException,
  LimitExceededException,
  ResourceNotFoundException,
  ServiceUnavailableException,
  StartQueryCommand,
  StopQueryCommand,
  ThrottlingException,
  paginateFilterLogEvents,
} from '@aws-sdk/client-cloudwatch-logs';
import {
  ChangeResourceRecordSetsCommand,
  GetChangeCommand,
  InvalidChangeBatch,
  ListResourceRecordSetsCommand,
  NoSuchChange,
  NoSuchHostedZone,
  Route53Client,
} from '@aws-sdk/client-route-53';
import { AssumeRoleCommand, GetCallerIdentityCommand, STSClient, STSServiceException } from '@aws-sdk/client-sts';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AwsError, FAKE_CREDENTIALS, type FakeAws, formatInsightsTimestamp, startFakeAws } from './fake-aws/index.js';

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0); // 2024-01-15T12:00:00.000Z

let aws: FakeAws;
const clients: Array<{ destroy(): void }> = [];

function track<T extends { destroy(): void }>(c: T): T {
  clients.push(c);
  return c;
}

/** A client that does not retry (so an injected fault surfaces at once). */
function base(): { endpoint: string; region: string; credentials: typeof FAKE_CREDENTIALS; maxAttempts: number } {
  return { endpoint: aws.endpoint, region: 'us-east-1', credentials: FAKE_CREDENTIALS, maxAttempts: 1 };
}
/** Standard retries with 3 attempts and a 5 ms backoff, so throttling tests stay fast. */
const fastRetries = (): { retryStrategy: ConfiguredRetryStrategy } => ({
  retryStrategy: new ConfiguredRetryStrategy(3, 5),
});

const logsClient = (extra: object = {}): CloudWatchLogsClient =>
  track(new CloudWatchLogsClient({ ...base(), ...extra }));
const acmClient = (): ACMClient => track(new ACMClient(base()));
const r53Client = (extra: object = {}): Route53Client => track(new Route53Client({ ...base(), ...extra }));
const stsClient = (): STSClient => track(new STSClient(base()));

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

beforeEach(async () => {
  aws = await startFakeAws();
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  expect(aws.unexpectedErrors).toEqual([]);
  await aws.close();
});

describe('CloudWatch Logs: FilterLogEvents', () => {
  function seed(): void {
    aws.logs.putLogEvents('/app/web', 'web/main/task-2', [
      { timestamp: T0 + 20, message: 'b2' },
      { timestamp: T0 + 5, message: 'b1 ERROR boom' },
    ]);
    aws.logs.putLogEvents('/app/web', 'web/main/task-1', [
      { timestamp: T0 + 10, message: 'a1', ingestionTime: T0 + 500 },
      { timestamp: T0 + 30, message: 'a2 ERROR' },
    ]);
    aws.logs.putLogEvents('/app/other', 's', [{ timestamp: T0, message: 'elsewhere' }]);
  }

  it('returns events of the group oldest first, with the AWS field names', async () => {
    seed();
    const out = await logsClient().send(new FilterLogEventsCommand({ logGroupName: '/app/web' }));
    expect(out.events?.map((e) => e.message)).toEqual(['b1 ERROR boom', 'a1', 'b2', 'a2 ERROR']);
    const first = out.events?.[1];
    expect(first).toEqual({
      logStreamName: 'web/main/task-1',
      timestamp: T0 + 10,
      ingestionTime: T0 + 500,
      message: 'a1',
      eventId: expect.stringMatching(/^\d{56}$/),
    });
    expect(out.nextToken).toBeUndefined();
    expect(out.searchedLogStreams).toEqual([
      { logStreamName: 'web/main/task-1', searchedCompletely: true },
      { logStreamName: 'web/main/task-2', searchedCompletely: true },
    ]);
    expect(aws.callsTo('FilterLogEvents')[0]).toMatchObject({
      service: 'logs',
      input: { logGroupName: '/app/web' },
      region: 'us-east-1',
      accessKeyId: FAKE_CREDENTIALS.accessKeyId,
      status: 200,
    });
  });

  it('selects streams by names or prefix, and times in ms with both ends inclusive', async () => {
    seed();
    const c = logsClient();
    const byNames = await c.send(
      new FilterLogEventsCommand({ logGroupName: '/app/web', logStreamNames: ['web/main/task-2'] }),
    );
    expect(byNames.events?.map((e) => e.message)).toEqual(['b1 ERROR boom', 'b2']);
    const byPrefix = await c.send(
      new FilterLogEventsCommand({ logGroupName: '/app/web', logStreamNamePrefix: 'web/main/task-1' }),
    );
    expect(byPrefix.events?.map((e) => e.message)).toEqual(['a1', 'a2 ERROR']);
    const window = await c.send(
      new FilterLogEventsCommand({ logGroupName: '/app/web', startTime: T0 + 10, endTime: T0 + 20 }),
    );
    expect(window.events?.map((e) => e.message)).toEqual(['a1', 'b2']);
    const byArn = await c.send(
      new FilterLogEventsCommand({ logGroupIdentifier: 'arn:aws:logs:us-east-1:123456789012:log-group:/app/other:*' }),
    );
    expect(byArn.events?.map((e) => e.message)).toEqual(['elsewhere']);
  });

  it('rejects logStreamNames together with logStreamNamePrefix, and unknown groups', async () => {
    seed();
    const c = logsClient();
    const both = await caught(
      c.send(new FilterLogEventsCommand({ logGroupName: '/app/web', logStreamNames: ['a'], logStreamNamePrefix: 'a' })),
    );
    expect(both).toBeInstanceOf(InvalidParameterException);
    expect(both).toMatchObject({
      name: 'InvalidParameterException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
    });
    const missing = await caught(c.send(new FilterLogEventsCommand({ logGroupName: '/nope' })));
    expect(missing).toBeInstanceOf(ResourceNotFoundException);
    expect((missing as Error).message).toBe('The specified log group does not exist.');
  });

  it('applies filterPattern through the pluggable matcher (default: substring)', async () => {
    seed();
    const c = logsClient();
    const sub = await c.send(new FilterLogEventsCommand({ logGroupName: '/app/web', filterPattern: 'ERROR' }));
    expect(sub.events?.map((e) => e.message)).toEqual(['b1 ERROR boom', 'a2 ERROR']);
    const seen: string[] = [];
    aws.logs.options.filterPatternMatcher = (pattern, message) => {
      seen.push(pattern);
      return message.endsWith('2');
    };
    const custom = await c.send(new FilterLogEventsCommand({ logGroupName: '/app/web', filterPattern: '?x ?y' }));
    expect(custom.events?.map((e) => e.message)).toEqual(['b2']);
    expect(new Set(seen)).toEqual(new Set(['?x ?y']));
  });

  it('pages with nextToken, losing and repeating nothing when a millisecond spans pages', async () => {
    aws.logs.options.filterPageSize = 3;
    const same = Array.from({ length: 5 }, (_, i) => ({ timestamp: T0 + 100, message: `same-${i}` }));
    aws.logs.putLogEvents('/g', 's1', [{ timestamp: T0, message: 'first' }, ...same.slice(0, 3)]);
    aws.logs.putLogEvents('/g', 's2', [...same.slice(3), { timestamp: T0 + 200, message: 'last' }]);
    const pages: FilterLogEventsCommandOutput[] = [];
    for await (const page of paginateFilterLogEvents({ client: logsClient() }, { logGroupName: '/g' }))
      pages.push(page);
    expect(pages.map((p) => p.events?.length)).toEqual([3, 3, 1]);
    expect(pages.flatMap((p) => p.events ?? []).map((e) => e.message)).toEqual([
      'first',
      'same-0',
      'same-1',
      'same-2',
      'same-3',
      'same-4',
      'last',
    ]);
    expect(pages[0]?.nextToken).toEqual(expect.any(String));
    expect(aws.callsTo('FilterLogEvents').map((c) => c.input.nextToken === undefined)).toEqual([true, false, false]);

    // The request's limit lowers the page size.
    const limited = await logsClient().send(new FilterLogEventsCommand({ logGroupName: '/g', limit: 2 }));
    expect(limited.events).toHaveLength(2);
    expect(limited.nextToken).toBeDefined();
  });

  it('can answer empty pages that still carry a nextToken', async () => {
    aws.logs.options.filterEmptyPages = 2;
    aws.logs.options.filterTrailingEmptyPage = true;
    aws.logs.putLogEvents('/g', 's', [{ timestamp: T0, message: 'only' }]);
    const c = logsClient();
    const sizes: number[] = [];
    let token: string | undefined;
    do {
      const out = await c.send(new FilterLogEventsCommand({ logGroupName: '/g', nextToken: token }));
      sizes.push(out.events?.length ?? -1);
      token = out.nextToken;
    } while (token !== undefined);
    expect(sizes).toEqual([0, 0, 1, 0]);
  });

  it('rejects a garbage nextToken', async () => {
    aws.logs.createLogGroup('/g');
    const err = await caught(
      logsClient().send(new FilterLogEventsCommand({ logGroupName: '/g', nextToken: 'garbage' })),
    );
    expect(err).toBeInstanceOf(InvalidParameterException);
  });

  it('can throttle beyond a configured rate per second', async () => {
    aws.logs.options.filterLogEventsTps = 2;
    aws.logs.createLogGroup('/g');
    const c = logsClient();
    await c.send(new FilterLogEventsCommand({ logGroupName: '/g' }));
    await c.send(new FilterLogEventsCommand({ logGroupName: '/g' }));
    const err = await caught(c.send(new FilterLogEventsCommand({ logGroupName: '/g' })));
    expect(err).toBeInstanceOf(ThrottlingException);
    expect((err as Error).message).toBe('Rate exceeded');
  });
});

describe('CloudWatch Logs: Logs Insights', () => {
  it('records StartQuery, answers Scheduled then Complete with default rows, newest first', async () => {
    aws.logs.putLogEvents('/a', 'sa', [
      { timestamp: T0 - 1, message: 'before window' },
      { timestamp: T0, message: 'a0' },
      { timestamp: T0 + 61_999, message: 'a-last-ms-of-end-second' },
      { timestamp: T0 + 62_000, message: 'after window' },
    ]);
    aws.logs.putLogEvents('/b', 'sb', [{ timestamp: T0 + 1_234, message: 'b0' }]);
    const c = logsClient();
    const start = await c.send(
      new StartQueryCommand({
        logGroupNames: ['/a', '/b'],
        startTime: T0 / 1000,
        endTime: T0 / 1000 + 61,
        queryString: 'fields @timestamp, @message | sort @timestamp desc',
        limit: 2,
      }),
    );
    expect(start.queryId).toEqual(expect.any(String));
    const q = aws.logs.query(start.queryId ?? '');
    expect(q).toMatchObject({
      queryString: 'fields @timestamp, @message | sort @timestamp desc',
      logGroupNames: ['/a', '/b'],
      startTime: T0 / 1000,
      endTime: T0 / 1000 + 61,
      limit: 2,
    });

    const first = await c.send(new GetQueryResultsCommand({ queryId: start.queryId }));
    expect(first.status).toBe('Scheduled');
    expect(first.results).toEqual([]);
    const done = await c.send(new GetQueryResultsCommand({ queryId: start.queryId }));
    expect(done.status).toBe('Complete');
    expect(done.statistics?.recordsMatched).toBe(3); // cut by limit 2
    expect(done.results).toHaveLength(2);
    expect(done.results?.[0]).toEqual([
      { field: '@timestamp', value: '2024-01-15 12:01:01.999' },
      { field: '@message', value: 'a-last-ms-of-end-second' },
      { field: '@logStream', value: 'sa' },
      { field: '@log', value: '123456789012:/a' },
      { field: '@ptr', value: expect.any(String) },
    ]);
    expect(done.results?.[1]?.[1]).toEqual({ field: '@message', value: 'b0' });
    expect(formatInsightsTimestamp(T0 + 5)).toBe('2024-01-15 12:00:00.005');
    // A final status stays put.
    expect((await c.send(new GetQueryResultsCommand({ queryId: start.queryId }))).status).toBe('Complete');
  });

  it('uses the pluggable handler, and can end Running → Failed after configured polls', async () => {
    aws.logs.createLogGroup('/a');
    aws.logs.options.queryHandler = (query) => ({
      rows: [[{ field: 'q', value: query.queryString }]],
      recordsMatched: 10,
      status: query.queryString.includes('fail') ? 'Failed' : 'Complete',
      pollsBeforeFinal: 2,
    });
    const c = logsClient();
    const ok = await c.send(
      new StartQueryCommand({ logGroupName: '/a', startTime: 1, endTime: 2, queryString: 'fields x' }),
    );
    const statuses: Array<string | undefined> = [];
    let out;
    do {
      out = await c.send(new GetQueryResultsCommand({ queryId: ok.queryId }));
      statuses.push(out.status);
    } while (out.status === 'Scheduled' || out.status === 'Running');
    expect(statuses).toEqual(['Scheduled', 'Running', 'Complete']);
    expect(out.results).toEqual([[{ field: 'q', value: 'fields x' }]]);
    expect(out.statistics?.recordsMatched).toBe(10);

    const bad = await c.send(
      new StartQueryCommand({ logGroupName: '/a', startTime: 1, endTime: 2, queryString: 'fail' }),
    );
    for (let i = 0; i < 2; i++) await c.send(new GetQueryResultsCommand({ queryId: bad.queryId }));
    const failed = await c.send(new GetQueryResultsCommand({ queryId: bad.queryId }));
    expect(failed.status).toBe('Failed');
    expect(failed.results).toEqual([]);
  });

  it('lets the handler reject a query with an AWS error', async () => {
    aws.logs.createLogGroup('/a');
    aws.logs.options.queryHandler = () => {
      throw new AwsError('MalformedQueryException', 'unexpected symbol');
    };
    const err = await caught(
      logsClient().send(
        new StartQueryCommand({ logGroupName: '/a', startTime: 1, endTime: 2, queryString: 'fields |' }),
      ),
    );
    expect(err).toMatchObject({ name: 'MalformedQueryException', message: 'unexpected symbol' });
  });

  it('enforces 50 log groups, existing groups and the concurrency limit', async () => {
    const groups = Array.from({ length: 51 }, (_, i) => `/g/${i}`);
    for (const g of groups) aws.logs.createLogGroup(g);
    const c = logsClient();
    const tooMany = await caught(
      c.send(
        new StartQueryCommand({ logGroupNames: groups, startTime: 1, endTime: 2, queryString: 'fields @message' }),
      ),
    );
    expect(tooMany).toBeInstanceOf(InvalidParameterException);
    expect(aws.logs.queries()).toEqual([]);
    await c.send(
      new StartQueryCommand({ logGroupNames: groups.slice(0, 50), startTime: 1, endTime: 2, queryString: 'x' }),
    );

    const missing = await caught(
      c.send(new StartQueryCommand({ logGroupNames: ['/nope'], startTime: 1, endTime: 2, queryString: 'x' })),
    );
    expect(missing).toBeInstanceOf(ResourceNotFoundException);

    aws.logs.options.maxConcurrentQueries = 2;
    await c.send(new StartQueryCommand({ logGroupName: '/g/0', startTime: 1, endTime: 2, queryString: 'x' }));
    const limit = await caught(
      c.send(new StartQueryCommand({ logGroupName: '/g/0', startTime: 1, endTime: 2, queryString: 'x' })),
    );
    expect(limit).toBeInstanceOf(LimitExceededException);
  });

  it('StopQuery cancels a running query; unknown ids are ResourceNotFoundException', async () => {
    aws.logs.createLogGroup('/a');
    const c = logsClient();
    const { queryId } = await c.send(
      new StartQueryCommand({ logGroupName: '/a', startTime: 1, endTime: 2, queryString: 'x' }),
    );
    expect((await c.send(new StopQueryCommand({ queryId }))).success).toBe(true);
    expect((await c.send(new GetQueryResultsCommand({ queryId }))).status).toBe('Cancelled');
    expect(await caught(c.send(new StopQueryCommand({ queryId })))).toBeInstanceOf(InvalidParameterException);
    expect(await caught(c.send(new GetQueryResultsCommand({ queryId: 'nope' })))).toBeInstanceOf(
      ResourceNotFoundException,
    );
    expect(aws.callsTo('StopQuery').map((x) => x.input)).toEqual([{ queryId }, { queryId }]);
  });

  it('DescribeLogGroups pages by limit and filters by prefix', async () => {
    for (const g of ['/app/a', '/app/b', '/app/c', '/other']) aws.logs.createLogGroup(g);
    const c = logsClient();
    const p1 = await c.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: '/app/', limit: 2 }));
    expect(p1.logGroups?.map((g) => g.logGroupName)).toEqual(['/app/a', '/app/b']);
    expect(p1.logGroups?.[0]?.arn).toBe('arn:aws:logs:us-east-1:123456789012:log-group:/app/a:*');
    const p2 = await c.send(
      new DescribeLogGroupsCommand({ logGroupNamePrefix: '/app/', limit: 2, nextToken: p1.nextToken }),
    );
    expect(p2.logGroups?.map((g) => g.logGroupName)).toEqual(['/app/c']);
    expect(p2.nextToken).toBeUndefined();
  });
});

describe('ACM', () => {
  it('DescribeCertificate returns status, validation records and epoch-second dates', async () => {
    const cert = aws.acm.addCertificate({
      domainName: 'app.example.com',
      validationRecords: [{ name: '_abc.app.example.com.', value: '_def.xyz.acm-validations.aws.' }],
      createdAt: T0,
    });
    const c = acmClient();
    const pending = await c.send(new DescribeCertificateCommand({ CertificateArn: cert.arn }));
    expect(pending.Certificate).toMatchObject({
      CertificateArn: cert.arn,
      DomainName: 'app.example.com',
      Status: 'PENDING_VALIDATION',
      Type: 'AMAZON_ISSUED',
      CreatedAt: new Date(T0),
      DomainValidationOptions: [
        {
          DomainName: 'app.example.com',
          ValidationStatus: 'PENDING_VALIDATION',
          ValidationMethod: 'DNS',
          ResourceRecord: { Name: '_abc.app.example.com.', Type: 'CNAME', Value: '_def.xyz.acm-validations.aws.' },
        },
      ],
    });
    expect(pending.Certificate?.IssuedAt).toBeUndefined();

    aws.acm.setStatus(cert.arn, 'ISSUED', T0 + 60_000);
    const issued = await c.send(new DescribeCertificateCommand({ CertificateArn: cert.arn }));
    expect(issued.Certificate?.Status).toBe('ISSUED');
    expect(issued.Certificate?.IssuedAt).toEqual(new Date(T0 + 60_000));
    expect(issued.Certificate?.NotAfter).toBeInstanceOf(Date);
    expect(issued.Certificate?.DomainValidationOptions?.[0]?.ValidationStatus).toBe('SUCCESS');
  });

  it('maps unknown and malformed ARNs to the SDK exception classes', async () => {
    const c = acmClient();
    const missing = await caught(
      c.send(new DescribeCertificateCommand({ CertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/nope' })),
    );
    expect(missing).toBeInstanceOf(AcmResourceNotFoundException);
    expect(await caught(c.send(new DescribeCertificateCommand({ CertificateArn: 'not-an-arn' })))).toBeInstanceOf(
      InvalidArnException,
    );
  });

  it('RequestCertificate creates a pending DNS certificate whose record appears after a delay; ListCertificates pages', async () => {
    aws.acm.options.recordHiddenForDescribes = 1;
    const c = acmClient();
    const { CertificateArn } = await c.send(
      new RequestCertificateCommand({
        DomainName: 'shop.example.org',
        ValidationMethod: 'DNS',
        IdempotencyToken: 'tok1',
      }),
    );
    const again = await c.send(
      new RequestCertificateCommand({
        DomainName: 'shop.example.org',
        ValidationMethod: 'DNS',
        IdempotencyToken: 'tok1',
      }),
    );
    expect(again.CertificateArn).toBe(CertificateArn);
    const d1 = await c.send(new DescribeCertificateCommand({ CertificateArn }));
    expect(d1.Certificate?.DomainValidationOptions?.[0]?.ResourceRecord).toBeUndefined();
    const d2 = await c.send(new DescribeCertificateCommand({ CertificateArn }));
    expect(d2.Certificate?.DomainValidationOptions?.[0]?.ResourceRecord).toMatchObject({
      Name: expect.stringMatching(/^_[0-9a-f]{32}\.shop\.example\.org\.$/),
      Type: 'CNAME',
      Value: expect.stringMatching(/\.acm-validations\.aws\.$/),
    });

    aws.acm.addCertificate({ domainName: 'b.example.org', status: 'ISSUED' });
    aws.acm.addCertificate({ domainName: 'c.example.org', status: 'ISSUED' });
    const page1 = await c.send(new ListCertificatesCommand({ CertificateStatuses: ['ISSUED'], MaxItems: 1 }));
    const page2 = await c.send(
      new ListCertificatesCommand({ CertificateStatuses: ['ISSUED'], MaxItems: 1, NextToken: page1.NextToken }),
    );
    expect(
      [...(page1.CertificateSummaryList ?? []), ...(page2.CertificateSummaryList ?? [])]
        .map((s) => s.DomainName)
        .sort(),
    ).toEqual(['b.example.org', 'c.example.org']);
    expect(page2.NextToken).toBeUndefined();
  });
});

describe('Route 53', () => {
  it('applies UPSERT/CREATE/DELETE and reports the change PENDING then INSYNC', async () => {
    const zoneId = aws.route53.createHostedZone('example.com');
    const c = r53Client();
    const out = await c.send(
      new ChangeResourceRecordSetsCommand({
        HostedZoneId: `/hostedzone/${zoneId}`,
        ChangeBatch: {
          Comment: 'validation & routing',
          Changes: [
            {
              Action: 'UPSERT',
              ResourceRecordSet: {
                Name: '_abc.App.example.com',
                Type: 'CNAME',
                TTL: 300,
                ResourceRecords: [{ Value: '_def.acm-validations.aws.' }],
              },
            },
            {
              Action: 'CREATE',
              ResourceRecordSet: {
                Name: 'example.com.',
                Type: 'TXT',
                TTL: 60,
                ResourceRecords: [{ Value: '"berth-verify=1 <&>"' }],
              },
            },
            {
              Action: 'CREATE',
              ResourceRecordSet: {
                Name: '*.example.com',
                Type: 'A',
                AliasTarget: {
                  HostedZoneId: '/hostedzone/Z35SXDOTRQ7X7K',
                  DNSName: 'lb.elb.amazonaws.com',
                  EvaluateTargetHealth: false,
                },
              },
            },
          ],
        },
      }),
    );
    expect(out.ChangeInfo?.Status).toBe('PENDING');
    expect(out.ChangeInfo?.Id).toMatch(/^\/change\/C[A-Z0-9]+$/);
    expect(out.ChangeInfo?.SubmittedAt).toBeInstanceOf(Date);
    expect(out.ChangeInfo?.Comment).toBe('validation & routing');

    expect(aws.route53.findRecord('_abc.app.example.com', 'CNAME')).toEqual({
      name: '_abc.app.example.com.',
      type: 'CNAME',
      ttl: 300,
      values: ['_def.acm-validations.aws.'],
    });
    expect(aws.route53.findRecord('example.com', 'TXT')?.values).toEqual(['"berth-verify=1 <&>"']);
    // The SDK strips "/hostedzone/" from the alias target zone id.
    expect(aws.route53.findRecord('*.example.com', 'A')?.aliasTarget?.hostedZoneId).toBe('Z35SXDOTRQ7X7K');
    const recorded = aws.callsTo('ChangeResourceRecordSets')[0]?.input;
    expect(recorded).toMatchObject({
      HostedZoneId: zoneId,
      ChangeBatch: {
        Changes: [{ Action: 'UPSERT', ResourceRecordSet: { Name: '_abc.App.example.com', TTL: 300 } }, {}, {}],
      },
    });

    const g1 = await c.send(new GetChangeCommand({ Id: out.ChangeInfo?.Id }));
    expect(g1.ChangeInfo?.Status).toBe('PENDING');
    const g2 = await c.send(new GetChangeCommand({ Id: out.ChangeInfo?.Id }));
    expect(g2.ChangeInfo?.Status).toBe('INSYNC');

    const list = await c.send(new ListResourceRecordSetsCommand({ HostedZoneId: zoneId }));
    expect(list.ResourceRecordSets?.map((r) => `${r.Name} ${r.Type}`)).toEqual([
      'example.com. NS',
      'example.com. SOA',
      'example.com. TXT',
      '\\052.example.com. A',
      '_abc.app.example.com. CNAME',
    ]);

    await c.send(
      new ChangeResourceRecordSetsCommand({
        HostedZoneId: zoneId,
        ChangeBatch: {
          Changes: [
            {
              Action: 'DELETE',
              ResourceRecordSet: {
                Name: '_abc.app.example.com.',
                Type: 'CNAME',
                TTL: 300,
                ResourceRecords: [{ Value: '_def.acm-validations.aws.' }],
              },
            },
          ],
        },
      }),
    );
    expect(aws.route53.findRecord('_abc.app.example.com', 'CNAME')).toBeUndefined();
  });

  it('answers InvalidChangeBatch, NoSuchHostedZone and NoSuchChange as the SDK classes, changing nothing on error', async () => {
    const zoneId = aws.route53.createHostedZone('example.com');
    const c = r53Client();
    const cname = (action: 'CREATE' | 'DELETE', value: string) => ({
      Action: action,
      ResourceRecordSet: {
        Name: 'www.example.com',
        Type: 'CNAME' as const,
        TTL: 60,
        ResourceRecords: [{ Value: value }],
      },
    });
    await c.send(
      new ChangeResourceRecordSetsCommand({ HostedZoneId: zoneId, ChangeBatch: { Changes: [cname('CREATE', 'a.')] } }),
    );
    const dup = await caught(
      c.send(
        new ChangeResourceRecordSetsCommand({
          HostedZoneId: zoneId,
          ChangeBatch: { Changes: [cname('CREATE', 'b.')] },
        }),
      ),
    );
    expect(dup).toBeInstanceOf(InvalidChangeBatch);
    expect((dup as Error).message).toBe(
      "[Tried to create resource record set [name='www.example.com.', type='CNAME'] but it already exists]",
    );
    const mismatch = await caught(
      c.send(
        new ChangeResourceRecordSetsCommand({
          HostedZoneId: zoneId,
          ChangeBatch: { Changes: [cname('DELETE', 'b.')] },
        }),
      ),
    );
    expect(mismatch).toBeInstanceOf(InvalidChangeBatch);
    const outside = await caught(
      c.send(
        new ChangeResourceRecordSetsCommand({
          HostedZoneId: zoneId,
          ChangeBatch: {
            Changes: [
              {
                Action: 'UPSERT',
                ResourceRecordSet: { Name: 'ok.example.com', Type: 'TXT', TTL: 1, ResourceRecords: [{ Value: '"x"' }] },
              },
              {
                Action: 'UPSERT',
                ResourceRecordSet: { Name: 'www.other.org', Type: 'TXT', TTL: 1, ResourceRecords: [{ Value: '"x"' }] },
              },
            ],
          },
        }),
      ),
    );
    expect(outside).toBeInstanceOf(InvalidChangeBatch);
    expect(aws.route53.findRecord('ok.example.com', 'TXT')).toBeUndefined(); // batches are atomic

    const noZone = await caught(
      c.send(
        new ChangeResourceRecordSetsCommand({
          HostedZoneId: '/hostedzone/ZNOPE',
          ChangeBatch: { Changes: [cname('CREATE', 'a.')] },
        }),
      ),
    );
    expect(noZone).toBeInstanceOf(NoSuchHostedZone);
    expect(noZone).toMatchObject({
      $metadata: { httpStatusCode: 404 },
      message: 'No hosted zone found with ID: ZNOPE',
    });
    expect(await caught(c.send(new GetChangeCommand({ Id: '/change/CNOPE' })))).toBeInstanceOf(NoSuchChange);
  });

  it('the SDK retries Route 53 Throttling', async () => {
    const zoneId = aws.route53.createHostedZone('example.com');
    aws.failNext('ChangeResourceRecordSets', { code: 'Throttling', times: 1 });
    const out = await r53Client(fastRetries()).send(
      new ChangeResourceRecordSetsCommand({
        HostedZoneId: zoneId,
        ChangeBatch: {
          Changes: [
            {
              Action: 'UPSERT',
              ResourceRecordSet: {
                Name: 'a.example.com',
                Type: 'A',
                TTL: 60,
                ResourceRecords: [{ Value: '192.0.2.1' }],
              },
            },
          ],
        },
      }),
    );
    expect(out.$metadata.attempts).toBe(2);
    expect(aws.callsTo('ChangeResourceRecordSets').map((c) => c.status)).toEqual([400, 200]);
  });
});

describe('STS', () => {
  it('AssumeRole hands out credentials that later calls are signed with', async () => {
    const roleArn = 'arn:aws:iam::210987654321:role/berth-reader';
    aws.sts.requireExternalId(roleArn, 'ext-1');
    const sts = stsClient();
    const out = await sts.send(
      new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: 'berth', ExternalId: 'ext-1' }),
    );
    expect(out.Credentials?.AccessKeyId).toMatch(/^ASIA/);
    expect(out.Credentials?.Expiration).toBeInstanceOf(Date);
    expect(out.AssumedRoleUser?.Arn).toBe('arn:aws:sts::210987654321:assumed-role/berth-reader/berth');
    expect(aws.callsTo('AssumeRole')[0]?.input).toEqual({
      RoleArn: roleArn,
      RoleSessionName: 'berth',
      ExternalId: 'ext-1',
    });

    const creds = out.Credentials;
    if (!creds?.AccessKeyId || !creds.SecretAccessKey) throw new Error('no credentials');
    aws.logs.createLogGroup('/g');
    const assumed = logsClient({
      credentials: {
        accessKeyId: creds.AccessKeyId,
        secretAccessKey: creds.SecretAccessKey,
        sessionToken: creds.SessionToken,
      },
    });
    await assumed.send(new FilterLogEventsCommand({ logGroupName: '/g' }));
    const call = aws.callsTo('FilterLogEvents')[0];
    expect(aws.sts.credentialsFor(call?.accessKeyId)?.roleArn).toBe(roleArn);

    const who = await track(new STSClient({ ...base(), credentials: assumed.config.credentials })).send(
      new GetCallerIdentityCommand({}),
    );
    expect(who.Account).toBe('210987654321');

    const denied = await caught(
      sts.send(new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: 'berth', ExternalId: 'wrong' })),
    );
    expect(denied).toBeInstanceOf(STSServiceException);
    expect(denied).toMatchObject({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
  });
});

describe('fault injection', () => {
  it('the SDK retries a throttled call: fail twice then succeed → one success, three calls recorded', async () => {
    aws.logs.createLogGroup('/g');
    aws.failNext('FilterLogEvents', { code: 'ThrottlingException', status: 400, times: 2 });
    const out = await logsClient(fastRetries()).send(new FilterLogEventsCommand({ logGroupName: '/g' }));
    expect(out.events).toEqual([]);
    expect(out.$metadata.attempts).toBe(3);
    const calls = aws.callsTo('FilterLogEvents');
    expect(calls.map((c) => [c.status, c.errorCode])).toEqual([
      [400, 'ThrottlingException'],
      [400, 'ThrottlingException'],
      [200, undefined],
    ]);
    expect(calls.every((c) => c.input.logGroupName === '/g')).toBe(true);
  });

  it('gives up after maxAttempts with the ThrottlingException class', async () => {
    aws.logs.createLogGroup('/g');
    aws.failNext('FilterLogEvents', { times: 5 });
    const err = await caught(logsClient(fastRetries()).send(new FilterLogEventsCommand({ logGroupName: '/g' })));
    expect(err).toBeInstanceOf(ThrottlingException);
    expect(err).toMatchObject({ message: 'Rate exceeded', $metadata: { attempts: 3, httpStatusCode: 400 } });
    expect(aws.callsTo('FilterLogEvents')).toHaveLength(3);
    // Two injected failures are left for the next calls.
    expect(await caught(logsClient().send(new FilterLogEventsCommand({ logGroupName: '/g' })))).toBeInstanceOf(
      ThrottlingException,
    );
  });

  it('injects arbitrary codes and statuses; 5xx are retried, client errors are not', async () => {
    aws.logs.createLogGroup('/g');
    aws.failNext('StartQuery', { code: 'ServiceUnavailableException', times: 1 });
    const c = logsClient(fastRetries());
    await c.send(new StartQueryCommand({ logGroupName: '/g', startTime: 1, endTime: 2, queryString: 'x' }));
    expect(aws.callsTo('StartQuery').map((x) => x.status)).toEqual([503, 200]);

    aws.failNext('StartQuery', { code: 'ServiceUnavailableException' });
    const unavailable = await caught(
      logsClient().send(new StartQueryCommand({ logGroupName: '/g', startTime: 1, endTime: 2, queryString: 'x' })),
    );
    expect(unavailable).toBeInstanceOf(ServiceUnavailableException);
    expect(unavailable).toMatchObject({ $fault: 'server', $metadata: { httpStatusCode: 503 } });

    aws.failNext('FilterLogEvents', { code: 'InvalidParameterException', message: 'nope' });
    const invalid = await caught(c.send(new FilterLogEventsCommand({ logGroupName: '/g' })));
    expect(invalid).toBeInstanceOf(InvalidParameterException);
    expect(aws.callsTo('FilterLogEvents')).toHaveLength(1);

    aws.failNext('*', { code: 'SomethingNew', status: 418, message: 'teapot' });
    const unknown = await caught(c.send(new FilterLogEventsCommand({ logGroupName: '/g' })));
    expect(unknown).toBeInstanceOf(CloudWatchLogsServiceException);
    expect(unknown).toMatchObject({ name: 'SomethingNew', message: 'teapot', $metadata: { httpStatusCode: 418 } });
  });

  it('delays calls, so a client-side timeout fires; close() does not wait for delayed calls', async () => {
    aws.logs.createLogGroup('/g');
    const c = logsClient();
    aws.delay('FilterLogEvents', 120, { times: 1 });
    const t = Date.now();
    await c.send(new FilterLogEventsCommand({ logGroupName: '/g' }));
    expect(Date.now() - t).toBeGreaterThanOrEqual(100);

    aws.delay('FilterLogEvents', 60_000);
    const err = await caught(
      c.send(new FilterLogEventsCommand({ logGroupName: '/g' }), { abortSignal: AbortSignal.timeout(100) }),
    );
    expect(err).toMatchObject({ name: 'AbortError' });
    aws.clearFaults();
    await c.send(new FilterLogEventsCommand({ logGroupName: '/g' }));

    aws.delay('*', 60_000);
    const hung = c.send(new FilterLogEventsCommand({ logGroupName: '/g' })).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    const closing = Date.now();
    await aws.close();
    expect(Date.now() - closing).toBeLessThan(1000);
    expect(await hung).toBeInstanceOf(Error);
    aws = await startFakeAws(); // for afterEach
  });

  it('can reset the connection', async () => {
    aws.logs.createLogGroup('/g');
    aws.failNext('FilterLogEvents', { reset: true });
    const err = await caught(logsClient().send(new FilterLogEventsCommand({ logGroupName: '/g' })));
    expect(err).toBeInstanceOf(Error);
    expect(aws.callsTo('FilterLogEvents')[0]?.errorCode).toBe('ECONNRESET');
  });
});
