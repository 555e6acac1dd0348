// How a delivery leaves (docs/webhooks.md, "Delivery"): one POST through undici, signed per Standard
// Webhooks, acknowledged by any 2xx within the timeout. The address rule (address.ts) is checked on
// every connection, by the connector of src/net/guarded-fetch.ts. Redirects are not followed, and at
// most 64 KiB of an answer is read: a receiver that hangs, trickles or answers gigabytes is cut off at
// the timeout, on its own connection, and holds up no other webhook.
import { createHmac } from 'node:crypto';
import { AddressRefusedError, CheckedAgent, type LookupAll } from '../net/guarded-fetch.ts';

/** The most of an answer read: the rest is not waited for. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Standard Webhooks' signature (https://www.standardwebhooks.com, "Signature scheme"): the HMAC-SHA256,
 * keyed by the secret's bytes (base64 after `whsec_`), of `id.timestamp.body`, as `v1,` and its base64.
 */
function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** What an attempt came to: the status answered (none when there was no answer), or why it failed. */
export interface SendResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
}

/** Posts deliveries to receivers, each connection checked by the address rule. */
export class Sender {
  private readonly agent: CheckedAgent;

  /**
   * `timeoutMs`: the whole attempt, connecting and reading the answer included (ROWBASE_WEBHOOK_TIMEOUT_MS).
   * `allowPrivate`: no address rule (ROWBASE_WEBHOOKS_ALLOW_PRIVATE).
   * `lookupAll`: how names are resolved; dns.lookup by default.
   */
  constructor(
    private readonly timeoutMs: number,
    allowPrivate: boolean,
    lookupAll?: LookupAll,
  ) {
    this.agent = new CheckedAgent({ allowPrivate, timeoutMs, connections: 16, lookupAll });
  }

  /** Posts `body` to `url` as the delivery `id`, signed with `secret`. */
  async send(url: string, secret: string, id: string, body: string): Promise<SendResult> {
    const started = performance.now();
    const timestamp = Math.floor(Date.now() / 1000);
    const signal = AbortSignal.timeout(this.timeoutMs);
    const result = (ok: boolean, status: number | null, error: string | null): SendResult => ({
      ok,
      status,
      error,
      durationMs: Math.round(performance.now() - started),
    });
    let status: number | null = null;
    try {
      const answer = await this.agent.request(url, {
        method: 'POST',
        signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'rowbase-webhooks',
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': sign(secret, id, timestamp, body),
        },
        body,
      });
      status = answer.statusCode;
      let read = 0;
      for await (const chunk of answer.body) {
        read += (chunk as Buffer).length;
        if (read >= MAX_ANSWER_BYTES) break; // leaving the loop destroys the body, and its connection
      }
      const ok = status >= 200 && status < 300;
      return result(ok, status, ok ? null : `answered ${status}`);
    } catch (error) {
      // A 2xx whose body did not end in time acknowledged the delivery all the same.
      if (status !== null && status >= 200 && status < 300) return result(true, status, null);
      return result(false, status, reasonOf(error, signal));
    }
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }
}

/** An attempt's error in a few words, for the delivery log. */
function reasonOf(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'timed out';
  const { code, message } = error as { code?: string; message?: string };
  if (error instanceof AddressRefusedError) return `address refused: ${error.message}`;
  return code ?? message ?? 'failed';
}
