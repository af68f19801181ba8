// A stable colour per function name, so the same function looks the same
// across zoom levels, lanes and sessions.

/** FNV-1a, 32-bit. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export interface Hsl {
  h: number;
  s: number;
  l: number;
}

/** Hue from the name's hash; saturation/lightness vary a little too so neighbours differ. */
export function functionHsl(name: string, dark: boolean): Hsl {
  const x = hashString(name);
  const h = x % 360;
  const s = 45 + ((x >>> 9) % 4) * 8; // 45..69
  const l = dark ? 38 + ((x >>> 13) % 3) * 6 : 68 + ((x >>> 13) % 3) * 6; // dark: 38..50, light: 68..80
  return { h, s, l };
}

export function functionColor(name: string, dark: boolean): string {
  const { h, s, l } = functionHsl(name, dark);
  return `hsl(${h} ${s}% ${l}%)`;
}
