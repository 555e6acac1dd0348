// The package ships no types: what test/support/metrics.ts reads of its answer.
declare module 'parse-prometheus-text-format' {
  export interface MetricFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: { labels?: Record<string, string>; value?: string }[];
  }
  export default function parsePrometheusTextFormat(text: string): MetricFamily[];
}
