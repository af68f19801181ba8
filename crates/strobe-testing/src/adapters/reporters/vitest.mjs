// Strobe's Vitest reporter: one `@strobe {json}` line per event on stdout, as
// it happens, through Vitest's reporter API (`onTestCaseReady`,
// `onTestCaseResult`, Vitest 3 and later). Vitest's own reporters name a
// failure's file:line only in the summary printed at the very end; this
// one sends each error with its source-mapped stack frames as the test
// ends. Results reach reporters from the workers only every 100 ms, so it
// also installs vitest-setup.mjs, which reports from inside the worker.
// Loaded by Vitest with `--reporter=<this file>`; the Rust parser
// (crates/strobe-testing/src/adapters/js/parser.rs) reads the lines.
import { writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The worker-side half (see that file): installed beside this one. */
const SETUP = fileURLToPath(new URL('./vitest-setup.mjs', import.meta.url));

/** Writes one event line straight to fd 1, past Vitest's own logger. */
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

/** The titles from the outermost suite down to `entity`. */
function titles(entity) {
  const out = [];
  for (let e = entity; e && e.type !== 'module'; e = e.parent) out.unshift(e.name);
  return out;
}

/** Vitest's serialized error: message, raw stack, and `stacks` already
 * parsed and source-mapped (TypeScript lines are the source's). */
function error(e) {
  if (!e || typeof e !== 'object') return { message: String(e) };
  return {
    message: e.name && e.message !== undefined ? `${e.name}: ${e.message}` : e.message,
    stack: typeof e.stack === 'string' ? e.stack : undefined,
    frames: Array.isArray(e.stacks)
      ? e.stacks.map((s) => ({ file: s.file, line: s.line, column: s.column, fn: s.method }))
      : undefined,
  };
}

function status(state) {
  if (state === 'passed') return 'passed';
  if (state === 'failed') return 'failed';
  return 'skipped';
}

export default class StrobeReporter {
  onInit(vitest) {
    // Vitest's CLI has no `--setupFiles`: add the worker-side half to every
    // project's resolved config before any worker starts.
    for (const project of vitest.projects || []) {
      // Browser tests run their setup files in the browser, without fd 1.
      if (project.config.browser && project.config.browser.enabled) continue;
      const files = project.config.setupFiles;
      if (Array.isArray(files) && !files.includes(SETUP)) files.push(SETUP);
    }
    // Console output by test id, attached to the test's result.
    this.logs = new Map();
  }

  onTestRunStart() {
    // Names are relative to the working directory, where Strobe runs the
    // test again (Vitest's `root` may be a subdirectory).
    emit({ event: 'run', runner: 'vitest', root: process.cwd() });
  }

  onTestModuleStart(module) {
    emit({ event: 'file-start', file: module.moduleId });
  }

  onTestCaseReady(test) {
    emit({ event: 'start', id: test.id, file: test.module.moduleId, titles: titles(test) });
  }

  onUserConsoleLog(log) {
    if (!log.taskId) return;
    this.logs.set(log.taskId, (this.logs.get(log.taskId) || '') + log.content);
  }

  onTestCaseResult(test) {
    const r = test.result();
    const d = test.diagnostic();
    const output = this.logs.get(test.id);
    this.logs.delete(test.id);
    emit({
      event: 'result',
      id: test.id,
      file: test.module.moduleId,
      titles: titles(test),
      status: status(r.state),
      durationMs: d ? d.duration : undefined,
      errors: (r.errors || []).map(error),
      output,
    });
  }

  onTestModuleEnd(module) {
    // Errors of the file itself: it did not load, or a suite-level hook
    // failed.
    const errors = module.errors ? module.errors() : [];
    if (errors.length > 0) {
      emit({ event: 'file-error', file: module.moduleId, errors: errors.map(error) });
    }
    emit({ event: 'file-end', file: module.moduleId });
  }

  onTestRunEnd(_modules, unhandledErrors, reason) {
    emit({ event: 'end', reason, errors: (unhandledErrors || []).map(error) });
  }
}
