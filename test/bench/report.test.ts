// How the bench judges a workload against its neighbour (bench/report.ts): by the median over the rounds
// of the two rates measured side by side in each, not by each side's median to (a).
import { expect } from 'chai';
import type { Measured } from '../../bench/measure.ts';
import { judgeTargets, type Measurement, summarise } from '../../bench/report.ts';
import { settingsFromArgs } from '../../bench/settings.ts';

/** A measurement of `requests` answers in one second. */
const measured = (requests: number): Measured => ({
  requests,
  rows: requests,
  seconds: 1,
  p50Ms: 1,
  p99Ms: 2,
  failures: 0,
  statusCodes: { 201: requests },
  windowUs: [0, 1e6],
});

/** Rounds of (a), `plain`, `typed` with the rates given, in that order, each taken to the (a) before it. */
function rounds(plain: string, typed: string, rates: [number, number, number][]): Measurement[] {
  return rates.flatMap(([a, plainRate, typedRate], index) => [
    { workload: 'baseline-memory', round: index + 1, measured: measured(a), peakRssKb: 1 },
    { workload: plain, round: index + 1, ratioTo: 'baseline-memory', measured: measured(plainRate), peakRssKb: 1 },
    { workload: typed, round: index + 1, ratioTo: 'baseline-memory', measured: measured(typedRate), peakRssKb: 1 },
  ]);
}

/** The target named `name` as judged from `measurements`. */
function target(measurements: Measurement[], name: string) {
  const targets = judgeTargets(summarise(measurements), { metering: 0, metrics: 0 }, 1024, settingsFromArgs([]));
  return targets.find((t) => t.name === name);
}

describe('bench', () => {
  describe('the typed insert-1 guard', () => {
    for (const [plain, typed] of [
      ['insert-1', 'insert-1-typed'],
      ['insert-1-postgres', 'insert-1-typed-postgres'],
    ]) {
      it(`judges ${typed} by the median of its rounds' ratios to ${plain}`, () => {
        // Rounds 0.90, 0.50, 0.85: the median is 0.85, where the sides' medians to (a) give 0.5 / 0.6.
        const measurements = rounds(plain, typed, [
          [10_000, 2_000, 1_800],
          [10_000, 6_000, 3_000],
          [10_000, 8_000, 6_800],
        ]);
        const [summary] = summarise(measurements).filter((s) => s.workload === typed);
        expect(summary.sideBySide?.neighbour).to.equal(plain);
        expect(summary.sideBySide?.ratios).to.deep.equal([0.9, 0.5, 0.85]);
        expect(target(measurements, typed)).to.deep.equal({
          name: typed,
          target: `≥ 0.8 × ${plain}`,
          value: `0.85 × ${plain}, rounds 0.90, 0.50, 0.85`,
          met: true,
        });
      });

      it(`misses ${typed} under 0.8 × ${plain}`, () => {
        const measurements = rounds(plain, typed, [
          [10_000, 5_000, 3_990],
          [10_000, 5_000, 3_950],
          [10_000, 5_000, 4_100],
        ]);
        expect(target(measurements, typed)).to.include({ value: `0.798 × ${plain}, rounds 0.80, 0.79, 0.82`, met: false });
      });
    }
  });
});
