// Strobe's Vitest setup file, run in each test worker before a test file:
// reports each test's start and end straight from the worker. Vitest sends
// test results to its reporters at most every 100 ms, so a test that spins
// forever keeps the results before it from ever reaching them; these lines
// are written before and right after each test instead. The reporter
// (vitest.mjs) still sends every result, authoritative and with
// source-mapped stacks; the parser merges both by test id.
import { writeSync } from 'node:fs';
import { beforeEach } from 'vitest';

function emit(event) {
  const data = Buffer.from(`@strobe ${JSON.stringify(event)}\n`);
  let off = 0;
  while (off < data.length) {
    try {
      off += writeSync(1, data, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') return;
    }
  }
}

/** The titles from the outermost suite down to `task`, the file left out. */
function titles(task) {
  const out = [];
  for (let t = task; t && t !== task.file; t = t.suite) out.unshift(t.name);
  return out;
}

function error(e) {
  if (!e || typeof e !== 'object') return { message: String(e) };
  return {
    message: e.name && e.message !== undefined ? `${e.name}: ${e.message}` : e.message,
    stack: typeof e.stack === 'string' ? e.stack : undefined,
  };
}

beforeEach((ctx) => {
  const task = ctx.task;
  const file = task.file && task.file.filepath;
  emit({ event: 'start', id: task.id, file, titles: titles(task) });
  ctx.onTestFinished(() => {
    const r = task.result || {};
    const status = r.state === 'pass' ? 'passed' : r.state === 'fail' ? 'failed' : 'skipped';
    emit({
      event: 'result',
      id: task.id,
      file,
      titles: titles(task),
      status,
      durationMs: r.duration,
      errors: (r.errors || []).map(error),
    });
  });
});
