// `npm start` (scripts/start.mjs) and `npm run openapi` run this first: `nest build` only when something it compiles or copies changed
// since the last build, so restarting an unchanged checkout starts at once. "Changed" is by
// modification time of every file and folder under src/ (a folder's time moves when a file is
// added, removed or renamed in it) and of the build configuration, against a stamp written
// after a successful build. Node has no built-in for this and `tsc -b` would not cover the
// copied web assets, hence these few lines.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');
const stamp = join(root, 'dist', '.build-stamp');
const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'nest-cli.json', 'package.json'];

function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let t = st.mtimeMs;
  for (const e of readdirSync(path)) t = Math.max(t, newest(join(path, e)));
  return t;
}

/** Builds into dist/ when anything it is built from changed since the last build. */
export function buildIfStale() {
  const built = existsSync(stamp) && existsSync(join(root, 'dist', 'main.js')) ? statSync(stamp).mtimeMs : -Infinity;
  const changed = Math.max(...inputs.map((p) => join(root, p)).filter(existsSync).map(newest));
  if (changed <= built) return;

  console.log(existsSync(stamp) ? 'Sources changed since the last build: building…' : 'First start: building…');
  const nest = join(root, 'node_modules', '@nestjs', 'cli', 'bin', 'nest.js');
  const started = new Date();
  const r = spawnSync(process.execPath, [nest, 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`nest build failed (exit code ${r.status})`);
  writeFileSync(stamp, `${started.toISOString()}\n`);
  // stamped with the start time: a file saved while the build ran counts as changed next time
  utimesSync(stamp, started, started);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    buildIfStale();
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
