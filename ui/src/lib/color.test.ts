import { describe, expect, it } from 'vitest';
import { functionColor, functionHsl, hashString } from './color';

describe('function colours', () => {
  it('hashes deterministically (FNV-1a)', () => {
    expect(hashString('')).toBe(0x811c9dc5);
    expect(hashString('a')).toBe(0xe40c292c);
    expect(hashString('fib')).toBe(hashString('fib'));
    expect(hashString('fib')).not.toBe(hashString('fic'));
  });
  it('gives the same name the same colour, and different names mostly different hues', () => {
    expect(functionColor('process_point', false)).toBe(functionColor('process_point', false));
    const names = ['fib', 'add', 'process_point', 'work', 'middle', 'leaf', 'tick_work', 'tick_leaf', 'main', 'parse'];
    const hues = new Set(names.map((n) => functionHsl(n, false).h));
    expect(hues.size).toBeGreaterThanOrEqual(9);
  });
  it('is darker in dark mode, lighter in light mode, with the same hue', () => {
    const light = functionHsl('fib', false);
    const dark = functionHsl('fib', true);
    expect(dark.h).toBe(light.h);
    expect(dark.l).toBeLessThan(light.l);
    expect(functionColor('fib', true)).toMatch(/^hsl\(\d+ \d+% \d+%\)$/);
  });
});
