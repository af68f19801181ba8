// Strobe's Jest reporter: one `@strobe {json}` line per event on stdout, as
// it happens. Jest's own reporters print a test file's results only once
// the whole file has finished; this one reports each test as it starts and
// ends, so a failure is known even when a later test in the same file
// never returns. Loaded by Jest with `--reporters=<this file>`; the Rust
// parser (crates/strobe-testing/src/adapters/js/parser.rs) reads the lines.
'use strict';

const fs = require('node:fs');

/** Writes one event line straight to fd 1: Jest's default reporter
 * buffers `process.stdout` behind a timer that a busy test never lets run. */
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

/** Jest's failure strings are the error's stack: message, then `at` frames. */
function errors(messages) {
  return (messages || []).map((stack) => ({ stack: String(stack) }));
}

function status(s) {
  if (s === 'passed') return 'passed';
  if (s === 'failed') return 'failed';
  return 'skipped'; // pending, skipped, todo, disabled, focused-out
}

class StrobeReporter {
  constructor() {
    // Tests already reported per file, by full name, so the file's final
    // result adds only the ones Jest never sends one by one (skipped).
    this.reported = new Map();
  }

  onRunStart() {
    // Names are relative to the working directory, where Strobe runs the
    // test again (Jest's `rootDir` may be a subdirectory).
    emit({ event: 'run', runner: 'jest', root: process.cwd() });
  }

  onTestFileStart(test) {
    emit({ event: 'file-start', file: test.path });
  }

  onTestCaseStart(test, info) {
    emit({ event: 'start', file: test.path, titles: [...info.ancestorTitles, info.title] });
  }

  onTestCaseResult(test, r) {
    const key = `${test.path}\0${r.fullName}`;
    this.reported.set(key, (this.reported.get(key) || 0) + 1);
    emit({
      event: 'result',
      file: test.path,
      titles: [...r.ancestorTitles, r.title],
      status: status(r.status),
      durationMs: r.duration == null ? undefined : r.duration,
      errors: errors(r.failureMessages),
    });
  }

  onTestFileResult(test, result) {
    for (const r of result.testResults || []) {
      const key = `${test.path}\0${r.fullName}`;
      const n = this.reported.get(key) || 0;
      if (n > 0) {
        this.reported.set(key, n - 1);
        continue;
      }
      emit({
        event: 'result',
        file: test.path,
        titles: [...r.ancestorTitles, r.title],
        status: status(r.status),
        durationMs: r.duration == null ? undefined : r.duration,
        errors: errors(r.failureMessages),
      });
    }
    // The file did not run (syntax error, failed import, failing
    // beforeAll…): Jest's message for it, as printed.
    if (result.testExecError) {
      const e = result.testExecError;
      emit({
        event: 'file-error',
        file: test.path,
        errors: [{ message: e.message, stack: e.stack ? String(e.stack) : undefined }],
        output: result.failureMessage || undefined,
      });
    }
    emit({ event: 'file-end', file: test.path });
  }

  onRunComplete(_contexts, results) {
    emit({
      event: 'end',
      errors: (results.runExecError ? [results.runExecError] : []).map((e) => ({
        message: e.message,
        stack: e.stack ? String(e.stack) : undefined,
      })),
    });
  }
}

module.exports = StrobeReporter;
