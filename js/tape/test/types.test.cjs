// The hand-written types (index.d.ts) compile under strict TypeScript, from ESM and CommonJS,
// and refuse what the JavaScript refuses (test/types/usage.mts, its @ts-expect-error lines).
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { test } = require('node:test');

test('the types compile, and reject a bad match, a bad pace, a missing fn and an unknown option', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
