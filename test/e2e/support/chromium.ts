// The browser of the end-to-end tests: the Chromium that the npm package `@sparticuz/chromium` carries inside its
// tarball (Brotli-compressed), so `npm install && npm test` needs no system package and no download from anywhere
// but the npm registry. It is unpacked once per version into node_modules/.cache (never a shared /tmp path that an
// older version could occupy), atomically, with the NSS, NSPR and expat libraries and the font it ships, which the
// browser process alone gets through LD_LIBRARY_PATH and FONTCONFIG_FILE. There is no fallback to another browser:
// a browser test that passes has run this one. The reasons and the measured cost are in docs/decisions.md.
import { spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';

export interface BundledChromium {
  executablePath: string;
  /** The environment of the browser process (not of the test process). */
  env: Record<string, string>;
  version: string;
}

function packageDir(): { bin: string; version: string } {
  // Its `exports` hide package.json from require.resolve; tests run from the repository's root.
  const manifest = resolve('node_modules/@sparticuz/chromium/package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  return { bin: join(dirname(manifest), 'bin'), version };
}

async function unbrotli(file: string, to: string): Promise<void> {
  await pipeline(createReadStream(file), createBrotliDecompress(), createWriteStream(to, { mode: 0o755 }));
}

async function untar(file: string, into: string): Promise<void> {
  mkdirSync(into, { recursive: true });
  // Decompressed to a file first: tar stops reading at the archive's end marker, before a pipe's end.
  const archive = `${into}.${process.pid}.tar`;
  await unbrotli(file, archive);
  try {
    await new Promise<void>((ok, fail) => {
      const tar = spawn('tar', ['-x', '-f', archive, '-C', into], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      tar.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      tar.on('error', fail);
      tar.on('close', (code) => (code === 0 ? ok() : fail(new Error(`tar -x ${file}: exit ${code}: ${stderr}`))));
    });
  } finally {
    rmSync(archive, { force: true });
  }
}

// Fontconfig reads the system's configuration when there is one, plus the font the package ships: text renders
// on a machine without any system font too.
function fontsConf(dir: string): string {
  return `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>${join(dir, 'fonts', 'fonts')}</dir>
  <cachedir>${join(dir, 'fonts-cache')}</cachedir>
</fontconfig>
`;
}

function describe(dir: string, version: string): BundledChromium {
  const libs = join(dir, 'al2023', 'lib');
  return {
    executablePath: join(dir, 'chromium'),
    version,
    env: {
      LD_LIBRARY_PATH: [libs, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
      FONTCONFIG_FILE: join(dir, 'fonts.conf'),
    },
  };
}

let unpacked: Promise<BundledChromium> | undefined;

/** The packaged Chromium, unpacked on first use (about 2 s and 210 MB), then reused. */
export function bundledChromium(): Promise<BundledChromium> {
  unpacked ??= unpack();
  return unpacked;
}

async function unpack(): Promise<BundledChromium> {
  const { bin, version } = packageDir();
  const root = resolve('node_modules/.cache');
  const dir = join(root, `berth-chromium-${version}`);
  if (existsSync(join(dir, '.complete'))) return describe(dir, version);
  // Files running at the same time each unpack apart and rename into place; the first rename wins.
  const scratch = `${dir}.${process.pid}.tmp`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  try {
    await Promise.all([
      unbrotli(join(bin, 'chromium.br'), join(scratch, 'chromium')),
      // libGLESv2 and libEGL sit beside the binary, where Chromium looks for them.
      untar(join(bin, 'swiftshader.tar.br'), scratch),
      untar(join(bin, 'fonts.tar.br'), join(scratch, 'fonts')),
      untar(join(bin, 'al2023.tar.br'), join(scratch, 'al2023')),
    ]);
    writeFileSync(join(scratch, 'fonts.conf'), fontsConf(dir));
    writeFileSync(join(scratch, '.complete'), `${version}\n`);
    try {
      renameSync(scratch, dir);
    } catch (e) {
      if (!existsSync(join(dir, '.complete'))) throw e;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return describe(dir, version);
}
