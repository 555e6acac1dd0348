// A server's metrics, fetched from its metrics listener (METRICS_PORT) and read by a Prometheus text-format
// parser, parse-prometheus-text-format. That parser reads a histogram's series only when they carry no label
// but `le` (it drops the others, and keeps one series): each histogram is read as its three series
// (`_bucket`, `_sum`, `_count`), untyped, with their labels, once its TYPE line has said it is a histogram
// (the parser then starts a family again for each label set: the series of a name are those of every family
// of that name).
import { expect } from 'chai';
import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';

export interface Scrape {
  /** The text as served. */
  text: string;
  families: MetricFamily[];
  /** The type each family's TYPE line declares, by name. */
  types: Map<string, string>;
}

/** Fetches `url` (a server's `metricsUrl`), checks its media type, and parses it. */
export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  expect(response.status, await response.clone().text()).to.equal(200);
  expect(response.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name, type]));
  const families = parsePrometheusTextFormat(text.replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped'));
  return { text, families, types };
}

/**
 * The value of the series `name` whose labels include `labels`, summed over the series that match (0 when
 * none does). For a histogram, name its `_count`, `_sum` or `_bucket`.
 */
export function value({ families }: Scrape, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const series of seriesOf(families, name)) {
    if (Object.entries(labels).every(([label, wanted]) => series.labels?.[label] === wanted)) sum += Number(series.value);
  }
  return sum;
}

/** Every value of `label` among the series of `name`. */
export function labelValues({ families }: Scrape, name: string, label: string): string[] {
  return [...new Set(seriesOf(families, name).flatMap((series) => (series.labels?.[label] === undefined ? [] : [series.labels[label]])))];
}

/** The series of `name`: the parser starts a family again at each label set of a histogram read untyped. */
const seriesOf = (families: MetricFamily[], name: string) =>
  families.filter((family) => family.name === name).flatMap((family) => family.metrics);
