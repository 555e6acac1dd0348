// Loaded first (`node --import tsx --import ./bench/slow-clock.ts …`) into a server that instructions.ts
// runs under valgrind, which runs it some 30 times slower: the server's clock and timers are slowed as
// much, so that what it does each second (the key and plan caches' refreshes, the usage flush, the WAL
// checkpoints) keeps the share of each request it has at full speed. `ROWBASE_SLOW_CLOCK`: the factor.
const factor = Number(process.env.ROWBASE_SLOW_CLOCK);
if (factor > 1) {
  const now = Date.now;
  const start = now();
  Date.now = () => Math.floor(start + (now() - start) / factor);
  const { setTimeout: timeout, setInterval: interval } = globalThis;
  globalThis.setTimeout = ((callback: () => void, ms = 0, ...args: unknown[]) =>
    timeout(callback, ms * factor, ...args)) as typeof setTimeout;
  globalThis.setInterval = ((callback: () => void, ms = 0, ...args: unknown[]) =>
    interval(callback, ms * factor, ...args)) as typeof setInterval;
}
