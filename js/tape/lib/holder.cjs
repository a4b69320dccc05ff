// holder.cjs: the command that `blackbox replay` wraps for replayTest.
//
// replayTest runs `blackbox replay CASSETTE -- node holder.cjs`. blackbox starts
// the replay proxy and runs this script with the environment it gives any agent
// (proxy variables, CA bundles, the Node preload, placeholder keys). The script
// writes that environment to stdout as one JSON line, so replayTest can route its
// own process through the same proxy, then waits. replayTest ends the replay by
// closing stdin: the script exits 0, and blackbox prints its verdict and report.
// If the test process dies, its end of the pipe closes too, so no replay outlives it.
'use strict';

// Under `blackbox record` or `fork`, replayTest writes "failed" before closing stdin when the test
// function threw: the script exits 1, so the recording ends as run_failed.
process.stdout.write(`${JSON.stringify({ holder: process.pid, env: process.env })}\n`);
let said = '';
process.stdin.on('data', (chunk) => {
  said += chunk;
});
process.stdin.on('end', () => process.exit(said.startsWith('failed') ? 1 : 0));
process.stdin.on('error', () => process.exit(0));
