// Seeded pseudo-random numbers, so that a run's amounts and customers
// follow from SEED and the iteration number alone.

// mulberry32 returns a generator of floats in [0, 1) for a 32-bit seed.
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// seedOf mixes strings and numbers into a 32-bit seed (FNV-1a).
export function seedOf(...parts) {
  let h = 0x811c9dc5;
  for (const ch of parts.join('|')) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
