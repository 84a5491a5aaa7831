import dns2 from 'dns2';

const { Packet } = dns2;

/** dns2's typings omit `Packet.RCODE`; RFC 1035 §4.1.1. */
const RCODE_NXDOMAIN = 3;
const RCODE_SERVFAIL = 2;

const TYPE_CODES = { A: Packet.TYPE.A, CNAME: Packet.TYPE.CNAME, TXT: Packet.TYPE.TXT } as const;

export interface TestDnsRecord {
  name: string;
  type: keyof typeof TYPE_CODES;
  /** An address, a CNAME target, or a TXT value (an array sends several character-strings in one record). */
  value: string | string[];
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, usable as a `DNS_SERVERS` entry. */
  address: string;
  setRecords(records: TestDnsRecord[]): void;
  /** While on, queries are counted but never answered. */
  setBlackhole(on: boolean): void;
  /** While on, every query is answered SERVFAIL (no answers), as a broken recursive resolver does. */
  setServfail(on: boolean): void;
  /** Queries received since start, answered or not. */
  queries(): number;
  close(): Promise<void>;
}

function canonical(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/**
 * An authoritative-only DNS server over UDP on 127.0.0.1 and a random port.
 * A name with records of other types answers NODATA (NOERROR, no answers); an
 * unknown name answers NXDOMAIN. It does not chase CNAMEs. TTLs are 0 so no
 * cache below the code under test can hide a query.
 */
export async function startDnsServer(): Promise<TestDnsServer> {
  let records: TestDnsRecord[] = [];
  let blackhole = false;
  let servfail = false;
  let queryCount = 0;

  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      queryCount += 1;
      if (blackhole) return;
      const response = Packet.createResponseFromRequest(request);
      response.header.aa = 1;
      const [question] = request.questions;
      if (servfail) response.header.rcode = RCODE_SERVFAIL;
      else if (question !== undefined) {
        const name = canonical(question.name);
        const sameName = records.filter((record) => canonical(record.name) === name);
        if (sameName.length === 0) response.header.rcode = RCODE_NXDOMAIN;
        for (const record of sameName) {
          if (TYPE_CODES[record.type] !== question.type) continue;
          const data =
            record.type === 'A'
              ? { address: record.value as string }
              : record.type === 'CNAME'
                ? { domain: record.value as string }
                : { data: record.value };
          // Packet.toBuffer encodes answers with the static Resource.encode, so plain objects do.
          response.answers.push({
            name: question.name,
            type: TYPE_CODES[record.type],
            class: Packet.CLASS.IN,
            ttl: 0,
            ...data,
          } as dns2.Packet.Resource);
        }
      }
      send(response).catch(() => undefined);
    },
  });

  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = addresses.udp?.port;
  if (port === undefined) throw new Error('the test DNS server did not bind a UDP port');

  return {
    address: `127.0.0.1:${port}`,
    setRecords(next) {
      records = [...next];
    },
    setBlackhole(on) {
      blackhole = on;
    },
    setServfail(on) {
      servfail = on;
    },
    queries: () => queryCount,
    close: () => server.close(),
  };
}
