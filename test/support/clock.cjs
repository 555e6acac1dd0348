// Preloaded into a `rowbase serve` child process by the tests (NODE_OPTIONS=--require): the process's clock,
// as Date.now() reads it (and so as rowbase reads the time by which rows expire), runs CLOCK_AHEAD_MS ahead
// of the host's; on SIGUSR2 it is set back to the host's, as an operator's clock jumps back, and the
// process prints the log line {"msg":"clock set back"} once it is.
const host = Date.now;
let ahead = Number(process.env.CLOCK_AHEAD_MS ?? 0);

Date.now = () => host() + ahead;
process.on('SIGUSR2', () => {
  ahead = 0;
  process.stdout.write(`${JSON.stringify({ msg: 'clock set back' })}\n`);
});
