import { describe, expect, it } from 'vitest';
import { DEFAULT_METRICS, channelSpecs, depthAt, laneAt, layoutLanes, spanY, threadLabel } from './lanes';

const M = { rowHeight: 10, densityHeight: 6, stripHeight: 12, gap: 4, top: 20, maxRows: 5 };

describe('layoutLanes', () => {
  it('stacks lanes with heights from their maxDepth', () => {
    const l = layoutLanes(
      [
        { kind: 'thread', key: 'a', label: 'main', maxDepth: 2 },
        { kind: 'thread', key: 'b', label: 'w', maxDepth: 0 },
        { kind: 'output', key: 'out', label: 'output' },
        { kind: 'agent', key: 'agent', label: 'agent' },
      ],
      M,
    );
    expect(l.lanes.map((x) => [x.y, x.height])).toEqual([
      [20, 6 + 3 * 10],
      [60, 16],
      [80, 12],
      [96, 12],
    ]);
    expect(l.height).toBe(112);
    expect(l.lanes[0].rowsY).toBe(26);
  });
  it('clips very deep nesting to maxRows', () => {
    const l = layoutLanes([{ kind: 'thread', key: 'a', label: 'a', maxDepth: 100 }], M);
    expect(l.lanes[0].rows).toBe(5);
    expect(spanY(l.lanes[0], 4, M)).toBe(26 + 40);
    expect(spanY(l.lanes[0], 5, M)).toBeNull();
  });
  it('finds the lane and depth under a y', () => {
    const l = layoutLanes(
      [
        { kind: 'thread', key: 'a', label: 'a', maxDepth: 1 },
        { kind: 'markers', key: 'm', label: 'markers' },
      ],
      M,
    );
    expect(laneAt(l, 19)).toBe(-1);
    expect(laneAt(l, 20)).toBe(0);
    expect(laneAt(l, 47)).toBe(-1); // the gap between lanes (46..49)
    expect(laneAt(l, 50)).toBe(1);
    expect(depthAt(l.lanes[0], 22, M)).toBe(-1); // density strip
    expect(depthAt(l.lanes[0], 27, M)).toBe(0);
    expect(depthAt(l.lanes[0], 37, M)).toBe(1);
    expect(depthAt(l.lanes[1], 55, M)).toBe(-1);
  });
  it('uses sane defaults', () => {
    const l = layoutLanes([{ kind: 'thread', key: 'a', label: 'a', maxDepth: 0 }]);
    expect(l.lanes[0].y).toBe(DEFAULT_METRICS.top);
  });
});

describe('threadLabel', () => {
  it('prefers the name, adds the pid when several processes show', () => {
    expect(threadLabel({ pid: 1, tid: 7, name: 'worker-0' }, false)).toBe('worker-0 (7)');
    expect(threadLabel({ pid: 1, tid: 7, name: null }, false)).toBe('tid 7');
    expect(threadLabel({ pid: 1, tid: 7, name: null }, true)).toBe('tid 7 · pid 1');
  });
});

describe('channelSpecs', () => {
  it('orders channel lanes as the server does, unknown names last', () => {
    const specs = channelSpecs(new Set(['scenario', 'zeta', 'net', 'stdin']));
    expect(specs.map((s) => s.key)).toEqual(['c:stdin', 'c:net', 'c:scenario', 'c:zeta']);
    expect(specs.every((s) => s.kind === 'channel')).toBe(true);
    expect(specs[1].label).toBe('channel net');
  });
});
