// The CPU time of synchronous work, for the bounds of tests that must hold on a loaded host: its wall
// time also counts the turns other processes take on the cores (two suites run at once in CI), its CPU
// time only this process's work.

/** What `work` answers, and the CPU time it took this process, in ms (user and system, every thread). */
export function cpuTimed<T>(work: () => T): { result: T; ms: number } {
  const before = process.cpuUsage();
  const result = work();
  const { user, system } = process.cpuUsage(before);
  return { result, ms: (user + system) / 1000 };
}
