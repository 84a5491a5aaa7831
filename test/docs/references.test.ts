// The documents point at what is in the repository: every relative link of README.md and docs/ reaches a file
// (and its heading, when it names one), and every `docs/design.md#<section>` cited anywhere names a section.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/process.js';

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

function filesUnder(dir: string, extensions: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path, extensions));
    else if (extensions.test(name)) out.push(path);
  }
  return out;
}

const DOCUMENTS = [join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs'), /\.md$/)];
const SOURCES = ['src', 'ui/src', 'test', 'scripts', 'bench'].flatMap((d) =>
  filesUnder(join(ROOT, d), /\.(ts|tsx|js|cjs|sql|md)$/),
);

describe('references in the documents', () => {
  it('reach files of the repository, and headings that exist', () => {
    const broken: string[] = [];
    for (const doc of DOCUMENTS) {
      const text = readFileSync(doc, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const file = path === '' ? doc : resolve(dirname(doc), path);
        const where = `${relative(ROOT, doc)} → ${target}`;
        if (!existsSync(file)) broken.push(`${where}: no such file`);
        else if (anchor !== undefined && file.endsWith('.md') && !anchors(file).has(anchor)) {
          broken.push(`${where}: no such heading`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('cite sections of docs/design.md that exist', () => {
    const sections = anchors(join(ROOT, 'docs/design.md'));
    const unknown: string[] = [];
    for (const file of [...DOCUMENTS, ...SOURCES]) {
      for (const [, anchor] of readFileSync(file, 'utf8').matchAll(/design\.md#([a-z0-9-]+)/g)) {
        if (!sections.has(anchor!)) unknown.push(`${relative(ROOT, file)}: #${anchor}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
