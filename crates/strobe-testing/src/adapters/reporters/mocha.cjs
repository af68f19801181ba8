// Strobe's Mocha reporter: one `@strobe {json}` line per event on stdout, as
// it happens (Mocha's built-in `json-stream` has no event for a test's
// start, and a test that never returns is exactly the one to name). Loaded
// by Mocha with `--reporter <this file>`; the Rust parser
// (crates/strobe-testing/src/adapters/js/parser.rs) reads the lines.
'use strict';

const fs = require('node:fs');

/** Writes one event line straight to fd 1, in order with the tests' own
 * output and before the next test can start. */
function emit(event) {
  const data = Buffer.from(`@strobe ${JSON.stringify(event)}\n`);
  let off = 0;
  while (off < data.length) {
    try {
      off += fs.writeSync(1, data, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') return;
    }
  }
}

/** The titles from the outermost suite down to `runnable`, the root
 * suite's empty title left out. */
function titles(runnable) {
  return typeof runnable.titlePath === 'function'
    ? runnable.titlePath().filter((t) => t !== '')
    : [runnable.title];
}

function error(err) {
  if (err === null || err === undefined) return { message: String(err) };
  if (typeof err !== 'object') return { message: String(err) };
  const name = err.name || 'Error';
  return {
    message: err.message === undefined ? String(err) : `${name}: ${err.message}`,
    stack: err.stack ? String(err.stack) : undefined,
  };
}

/** The file a runnable comes from: its own, else its suite's. */
function fileOf(runnable) {
  for (let r = runnable; r; r = r.parent) {
    if (r.file) return r.file;
  }
  return undefined;
}

function StrobeReporter(runner) {
  // A failing hook is no test's failure (a failing `before` skips its
  // suite's tests): it is reported as its file's.
  runner.on('start', () => emit({ event: 'run', runner: 'mocha', root: process.cwd() }));
  runner.on('suite', (suite) => {
    if (suite.root || !suite.parent || !suite.parent.root) return;
    emit({ event: 'file-start', file: fileOf(suite) });
  });
  runner.on('test', (test) => emit({ event: 'start', file: fileOf(test), titles: titles(test) }));
  runner.on('pass', (test) =>
    emit({
      event: 'result',
      file: fileOf(test),
      titles: titles(test),
      status: 'passed',
      durationMs: test.duration,
      errors: [],
    }),
  );
  runner.on('pending', (test) =>
    emit({ event: 'result', file: fileOf(test), titles: titles(test), status: 'skipped', errors: [] }),
  );
  runner.on('fail', (runnable, err) => {
    if (runnable.type === 'hook') {
      emit({
        event: 'file-error',
        file: fileOf(runnable),
        title: titles(runnable).join(' > '),
        errors: [error(err)],
      });
      return;
    }
    emit({
      event: 'result',
      file: fileOf(runnable),
      titles: titles(runnable),
      status: 'failed',
      durationMs: runnable.duration,
      errors: [error(err)],
    });
  });
  runner.on('end', () => emit({ event: 'end', errors: [] }));
}

module.exports = StrobeReporter;
