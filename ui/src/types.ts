// Shapes of the daemon's JSON API. Everything optional that the daemon may
// leave out is optional here, and every consumer copes with a missing field.

export interface EventCounts {
  stored: number;
  evicted?: number;
  dropped?: number;
  [k: string]: unknown;
}

export interface TraceInfo {
  mode?: string;
  activePatterns?: string[];
  hookedFunctions?: number;
  [k: string]: unknown;
}

export interface Session {
  sessionId: string;
  pid?: number;
  /** running / exited / crashed / killed / stopped, or something newer. */
  state: string;
  exitCode?: number | null;
  signal?: string | null;
  reason?: string | null;
  binaryPath?: string;
  projectRoot?: string;
  startedAt?: number;
  endedAt?: number;
  events?: EventCounts;
  retained?: boolean;
  live?: boolean;
  pids?: number[];
  trace?: TraceInfo;
  breakpoints?: unknown;
  paused?: unknown;
  [k: string]: unknown;
}

export interface Span {
  startNs: number;
  durNs: number;
  depth: number;
  func: number;
  seq: number;
  open: boolean;
}

export interface Lane {
  pid: number;
  tid: number;
  name: string | null;
  spans: Span[];
  counts: number[];
  maxDepth: number;
}

/** An output line or a marker on the timeline. */
export interface Item {
  tsNs: number;
  kind: string;
  seq: number;
  pid: number;
  tid: number;
  text: string;
}

/** One I/O channel's events on the timeline (its lane). */
export interface ChannelLane {
  /** `stdin`, `file`, `net`, `midi`, `audio`, `ui` or `scenario`. */
  channel: string;
  /** Empty when there were too many to send one by one (then counts). */
  items: Item[];
  counts: number[];
}

export interface Timeline {
  fromNs: number;
  toNs: number;
  endNs: number;
  columns: number;
  lanes: Lane[];
  output: Item[];
  outputCounts: number[];
  markers: Item[];
  markerCounts: number[];
  /** Lanes of the channels with events in the window, in drawing order. */
  channels?: ChannelLane[];
  functions: Record<string, string>;
  eventsRead?: number;
}

/** One event as debug_query renders it; only these few are always there. */
export interface QueryEvent {
  id: number;
  timestampNs: number;
  eventType: string;
  function?: string;
  sourceFile?: string | null;
  line?: number | null;
  text?: string;
  durationNs?: number;
  returnValue?: unknown;
  pid?: number;
  threadId?: number;
  threadName?: string | null;
  [k: string]: unknown;
}

export interface QueryReply {
  events: QueryEvent[];
  totalCount: number;
  hasMore: boolean;
  truncated?: Record<string, unknown>;
}

export interface QueryArgs {
  eventType?: string;
  function?: { equals?: string; contains?: string; matches?: string };
  sourceFile?: { equals?: string; contains?: string };
  returnValue?: { equals?: unknown; isNull?: boolean };
  threadName?: { contains?: string };
  timeFrom?: number | string;
  timeTo?: number | string;
  minDurationNs?: number;
  pid?: number;
  textContains?: string;
  limit?: number;
  offset?: number;
  verbose?: boolean;
  aggregate?: string;
  /** Count every match (else past a few ms totalCount is an estimate). */
  exactCount?: boolean;
}

export interface EventDetail {
  event: QueryEvent;
  enter?: QueryEvent;
}

export interface AgentCall {
  seq: number;
  tool: string;
  args?: unknown;
  startedAtMs?: number;
  /** ns relative to the session's start; negative = before launch. */
  offsetNs: number;
  durationMs: number;
  responseBytes?: number;
  isError?: boolean;
  summary?: string;
  /** The MCP client that called (an agent's name, or strobe-dap). */
  client?: string;
  /** Who that is: the agent, an editor (strobe dap) or a scenario run. */
  side?: 'agent' | 'editor' | 'scenarios' | string;
}

export interface TraceReply {
  mode?: string;
  activePatterns?: string[];
  hookedFunctions?: number;
  [k: string]: unknown;
}

/** A debug_test status object: running or completed (or a newer shape). */
export type TestRun = Record<string, unknown> & {
  testRunId?: string;
  status?: string;
  framework?: string;
  sessionId?: string;
};

export type LiveMessage =
  | { type: 'status'; status: Session }
  | { type: 'output'; items: Item[]; skipped: number }
  | { type: 'events'; stored: number; endNs: number }
  | { type: 'agent'; call: AgentCall }
  | { type: 'ended'; status: Session }
  | { type: 'error'; message: string };

/** One run's call at a diff's first divergence. */
export interface DiffSide {
  eventId: number;
  exitEventId?: number | null;
  timestampNs: number;
  function: string;
  path: string;
  ordinal: number;
  arguments?: string | null;
  returnValue?: string | null;
}

/** `GET /api/diff`: debug_diff's answer and its text. */
export interface DiffReply {
  baseline: { sessionId: string; program: string; ended: string; callsCompared: number; threads: number };
  candidate: { sessionId: string; program: string; ended: string; callsCompared: number; threads: number };
  firstDivergence: {
    kind: string;
    thread: string;
    matchedBefore: number;
    baseline?: DiffSide | null;
    candidate?: DiffSide | null;
  } | null;
  exit: { same: boolean; baseline: string; candidate: string; baselineCrash?: { eventId: number; summary: string } | null; candidateCrash?: { eventId: number; summary: string } | null };
  output: {
    firstDifferences: { stream: string; line: number; baseline?: { eventId: number; text: string } | null; candidate?: { eventId: number; text: string } | null }[];
  };
  calls: {
    onlyInBaseline: { function: string; calls: number }[];
    onlyInCandidate: { function: string; calls: number }[];
    countsDiffer: { function: string; baseline: number; candidate: number }[];
  };
  valueDifferences: { function: string; what: string; value: string; in: string; calls: number; of: number; firstEventId: number }[];
  notCompared: string[];
  truncated: Record<string, number>;
  text: string;
}
