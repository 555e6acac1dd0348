/**
 * How many lines of the header `name` (in lower case) a request carries, from its `rawHeaders` (names and
 * values in turn). For the headers a request may carry once, Node keeps the first line in `headers` and
 * drops the others (Host, Authorization), so that a second is seen only here.
 */
export function headerLines(rawHeaders: readonly string[], name: string): number {
  let lines = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const sent = rawHeaders[index];
    if (sent.length === name.length && sent.toLowerCase() === name) lines++;
  }
  return lines;
}
