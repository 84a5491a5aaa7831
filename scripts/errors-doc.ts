/** Regenerates docs/errors.md from the catalogue: `npx tsx scripts/errors-doc.ts`. */
import { writeFileSync } from 'node:fs';
import { CATALOGUE } from '../src/core/errors.js';

const lines = [
  '# Error codes',
  '',
  "Every error response is Berth's error object ([`design.md`](design.md#errors)): `code`, `message`, and",
  'optionally `description`, `action`, `details`, `isInternal`, `metadata`, `requestId` — nothing else. `requestId`',
  'is always set and equals the `x-request-id` response header. `isInternal` and the `metadata` of internal (5xx)',
  'errors are shown only to superadmins.',
  '',
  'This table is generated from `src/core/errors.ts` (`npx tsx scripts/errors-doc.ts`); a test fails when they differ.',
  '',
  '| code | status | message |',
  '|---|---|---|',
  ...Object.entries(CATALOGUE).map(([code, e]) => `| \`${code}\` | ${e.status} | ${e.message} |`),
  '',
];
writeFileSync(new URL('../docs/errors.md', import.meta.url), lines.join('\n'));
