// `npm start`: build when something changed (see build-if-stale.mjs), then run the service in
// this same process; one Node start instead of two keeps a restart short.
import { createRequire } from 'node:module';
import { buildIfStale } from './build-if-stale.mjs';

try {
  buildIfStale();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
createRequire(import.meta.url)('../dist/main.js');
