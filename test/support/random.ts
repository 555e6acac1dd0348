// Random test data that a failure can make again: a small deterministic generator (mulberry32) of a seed.

/** A generator of whole numbers below its argument, the same sequence for the same `seed`. */
export function random(seed: number): (below: number) => number {
  let state = seed;
  return (below: number) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
}
