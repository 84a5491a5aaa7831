import dns2 from 'dns2';

const { Packet } = dns2;
const RCODE_NXDOMAIN = 3;
const TYPES = { A: Packet.TYPE.A, CNAME: Packet.TYPE.CNAME, TXT: Packet.TYPE.TXT } as const;

export interface StubRecord {
  name: string;
  type: keyof typeof TYPES;
  value: string;
}

export interface DnsStub {
  /** `127.0.0.1:<port>`, for `DNS_SERVERS`. */
  address: string;
  queries(): number;
  close(): Promise<void>;
}

const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

/**
 * An authoritative DNS stub on loopback UDP, like test/support/dns-server.ts but looking names up
 * in a map, so tens of thousands of records answer as fast as a few: the benchmark measures
 * Berth, not the stub. Unknown names answer NXDOMAIN; TTLs are those Berth's cache overrides.
 */
export async function startDnsStub(records: StubRecord[]): Promise<DnsStub> {
  const byName = new Map<string, StubRecord[]>();
  for (const r of records) {
    const list = byName.get(key(r.name));
    if (list === undefined) byName.set(key(r.name), [r]);
    else list.push(r);
  }
  let queries = 0;
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      queries++;
      const response = Packet.createResponseFromRequest(request);
      response.header.aa = 1;
      const [question] = request.questions;
      const found = question === undefined ? undefined : byName.get(key(question.name));
      if (found === undefined) response.header.rcode = RCODE_NXDOMAIN;
      for (const r of found ?? []) {
        if (TYPES[r.type] !== question!.type) continue;
        const data =
          r.type === 'A' ? { address: r.value } : r.type === 'CNAME' ? { domain: r.value } : { data: r.value };
        response.answers.push({
          name: question!.name,
          type: TYPES[r.type],
          class: Packet.CLASS.IN,
          ttl: 300,
          ...data,
        } as dns2.Packet.Resource);
      }
      send(response).catch(() => undefined);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = addresses.udp?.port;
  if (port === undefined) throw new Error('the DNS stub did not bind a UDP port');
  return { address: `127.0.0.1:${port}`, queries: () => queries, close: () => server.close() };
}
