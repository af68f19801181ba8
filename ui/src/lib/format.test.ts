import { describe, expect, it } from 'vitest';
import { formatAgo, formatBytes, formatClock, formatDuration, formatMs, formatTick, formatTimestamp } from './format';

describe('formatDuration', () => {
  it('picks the unit by magnitude with three significant digits', () => {
    expect(formatDuration(0)).toBe('0 ns');
    expect(formatDuration(850)).toBe('850 ns');
    expect(formatDuration(963.4)).toBe('963 ns');
    expect(formatDuration(1000)).toBe('1 µs');
    expect(formatDuration(12_345)).toBe('12.3 µs');
    expect(formatDuration(4_561_000)).toBe('4.56 ms');
    expect(formatDuration(999_999_999)).toBe('1000 ms');
    expect(formatDuration(1_234_000_000)).toBe('1.23 s');
  });
  it('switches to minutes and hours for long times', () => {
    expect(formatDuration(125e9)).toBe('2 m 05 s');
    expect(formatDuration(3600e9 + 61e9)).toBe('1 h 01 m 01 s');
  });
  it('copes with negatives and missing values', () => {
    expect(formatDuration(-2500)).toBe('-2.5 µs');
    expect(formatDuration(undefined)).toBe('—');
    expect(formatDuration(NaN)).toBe('—');
    expect(formatMs(3.2)).toBe('3.2 ms');
    expect(formatMs(null)).toBe('—');
  });
});

describe('formatBytes', () => {
  it('uses binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(1234)).toBe('1.21 KiB');
    expect(formatBytes(200 * 1024)).toBe('200 KiB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5 MiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3 GiB');
    expect(formatBytes(-1)).toBe('—');
  });
});

describe('formatTick', () => {
  it('uses the largest unit where the step needs few decimals', () => {
    expect(formatTick(1_250_000_000, 50_000_000)).toBe('1.25 s');
    expect(formatTick(2_000_000_000, 1_000_000_000)).toBe('2 s');
    expect(formatTick(1_250_500_000, 500_000, 2e9)).toBe('1250.5 ms');
    expect(formatTick(3_000, 1_000, 10_000)).toBe('3 µs');
    expect(formatTick(400, 200, 1000)).toBe('0.4 µs');
    expect(formatTick(400, 200, 900)).toBe('400 ns');
  });
  it('adds decimals in the axis unit for finer readouts', () => {
    expect(formatTick(1_723_801_234, 1_000_000, 1.8e9)).toBe('1.724 s');
    expect(formatTick(1_723_801_234, 1_000_000, 1.8e9, 2)).toBe('1.72380 s');
  });
  it('gives neighbouring ticks distinct labels', () => {
    const step = 20_000;
    const labels = [0, 1, 2, 3].map((i) => formatTick(1_000_000_000 + i * step, step, 2e9));
    expect(new Set(labels).size).toBe(4);
  });
});

describe('clock and timestamps', () => {
  it('formats local clock time', () => {
    const d = new Date(2026, 10, 22, 9, 4, 5).getTime();
    expect(formatClock(d)).toBe('2026-11-22 09:04:05');
    expect(formatClock(undefined)).toBe('—');
  });
  it('says how long ago', () => {
    expect(formatAgo(1000, 3000)).toBe('just now');
    expect(formatAgo(0, 42_000)).toBe('42 s ago');
    expect(formatAgo(0, 5 * 60_000)).toBe('5 min ago');
    expect(formatAgo(0, 3 * 3600_000)).toBe('3 h ago');
    expect(formatAgo(0, 2 * 86400_000)).toBe('2 d ago');
  });
  it('shows event times in seconds with µs precision', () => {
    expect(formatTimestamp(1_063_773_788)).toBe('1.063774 s');
  });
});
