// How far an export or an import has come, on stderr (stdout may be the export itself): a bar with rows
// per second on a terminal (cli-progress), and otherwise, for logs, a plain line every PLAIN_LINE_MS.
// Both end with one line that sums the work up.
import type { SingleBar } from 'cli-progress';

/** How often a plain line is written when stderr is no terminal. */
const PLAIN_LINE_MS = 5000;

export class Progress {
  private rows = 0;
  private readonly started = performance.now();
  private lastLine = this.started;

  /** `verb`: what is done to the rows (exported, imported); `total`: the rows there are to do. */
  private constructor(
    private readonly verb: string,
    private readonly total: number,
    private readonly bar: SingleBar | undefined,
  ) {}

  /** A bar on stderr if it is a terminal (or `tty`) and there are rows, else plain lines. */
  static async start(verb: string, total: number, tty = process.stderr.isTTY === true): Promise<Progress> {
    if (!tty || total === 0) return new Progress(verb, total, undefined);
    const { default: progress } = await import('cli-progress');
    const bar = new progress.SingleBar(
      {
        stream: process.stderr,
        format: `${verb} [{bar}] {value}/{total} rows | {rate} rows/s | {eta_formatted} left`,
        hideCursor: true,
        fps: 5,
        etaBuffer: 50,
      },
      progress.Presets.shades_classic,
    );
    bar.start(total, 0, { rate: 0 });
    return new Progress(verb, total, bar);
  }

  /** `rows` more done. */
  add(rows: number): void {
    this.rows += rows;
    const now = performance.now();
    if (this.bar) {
      this.bar.update(this.rows, { rate: this.rate(now) });
      return;
    }
    if (now - this.lastLine < PLAIN_LINE_MS) return;
    this.lastLine = now;
    process.stderr.write(`rowbase: ${this.verb} ${this.rows} of ${this.total} rows, ${this.rate(now)} rows/s\n`);
  }

  /** Takes the bar away (the work failed or is done). */
  stop(): void {
    this.bar?.stop();
  }

  /** Ends the bar, and writes the line that sums up: `rowbase: <verb> <n> rows <what> in <s> s (<rate> rows/s)`. */
  done(what: string): void {
    this.stop();
    const now = performance.now();
    const seconds = ((now - this.started) / 1000).toFixed(1);
    process.stderr.write(`rowbase: ${this.verb} ${this.rows} rows ${what} in ${seconds} s (${this.rate(now)} rows/s)\n`);
  }

  private rate(now: number): number {
    return Math.round(this.rows / Math.max((now - this.started) / 1000, 0.001));
  }
}
