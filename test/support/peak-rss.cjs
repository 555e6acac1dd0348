// Preloaded into a `rowbase` child process by the tests (NODE_OPTIONS=--require): as it exits, writes its
// peak resident memory, in kB (getrusage's ru_maxrss), to the file PEAK_RSS_FILE names.
const { writeFileSync } = require('node:fs');

process.on('exit', () => writeFileSync(process.env.PEAK_RSS_FILE, String(process.resourceUsage().maxRSS)));
