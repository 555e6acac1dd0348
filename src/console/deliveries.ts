// A webhook's delivery log (openapi.yaml, listWebhookDeliveries; docs/webhooks.md, "Retries"): one line
// per attempt, newest first, a page at a time, *More* following the page's `next`. *Retry* on a failed
// attempt makes its change's next attempt due now (retryWebhookDelivery); the service refuses it (409)
// for a change delivered since, and the console says its reason.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { type Api, describe, type Webhook, type WebhookDelivery } from './api.ts';
import { ColumnsWithActions, Status, When } from './parts.ts';

/** Attempts a page. */
const PAGE_SIZE = 20;

export function DeliveryLog({ api, webhook }: { api: Api; webhook: Webhook }) {
  const [deliveries, setDeliveries] = useState<WebhookDelivery[]>([]);
  // The `before` of the next page; `null` after the last; undefined until the first is read.
  const [next, setNext] = useState<number | null>();
  const [error, setError] = useState('');
  const [note, setNote] = useState('');

  /** Reads the page from `before`, after those shown; the newest page, alone, without. */
  const read = async (before?: number) => {
    try {
      const page = await api.deliveries(webhook.id, PAGE_SIZE, before);
      setDeliveries((shown) => (before === undefined ? page.deliveries : [...shown, ...page.deliveries]));
      setNext(page.next);
      setError('');
    } catch (failure) {
      setError(describe(failure));
    }
  };
  useEffect(() => {
    read();
  }, []);

  const retry = async ({ id, collection, seq }: WebhookDelivery) => {
    try {
      await api.retryDelivery(webhook.id, id);
      setError('');
      // A disabled webhook keeps the retry due until it is enabled (openapi.yaml, retryWebhookDelivery).
      const when = webhook.enabled ? 'now' : 'once the webhook is enabled';
      setNote(`The change ${collection} #${seq} is sent again ${when}: Refresh to see how it went.`);
    } catch (failure) {
      setNote('');
      setError(describe(failure));
    }
  };

  return html`
    <section class="deliveries" aria-labelledby="deliveries-title">
      <h3 id="deliveries-title">Deliveries to ${webhook.url}</h3>
      <${Status} error=${error} note=${note} />
      ${
        next === undefined
          ? null
          : deliveries.length === 0
            ? html`<p class="empty">No attempt yet: the webhook has had no change to send, or none in the last 7 days.</p>`
            : html`
              <div class="table-scroll">
                <table class="delivery-table">
                  <caption>Attempts 1–${deliveries.length}, newest first${next === null ? '' : ', older ones after More'}</caption>
                  <thead><${ColumnsWithActions} columns=${['At', 'Collection', 'Seq', 'webhook-id', 'Attempt', 'Outcome', 'Status', 'Duration', 'Error', 'Next attempt']} /></thead>
                  <tbody>
                    ${deliveries.map((delivery) => html`<${Attempt} key=${delivery.id} delivery=${delivery} onRetry=${retry} />`)}
                  </tbody>
                </table>
              </div>
              <nav class="pager" aria-label="Older deliveries">
                <button type="button" disabled=${next === null} onClick=${() => read(next ?? undefined)}>More</button>
              </nav>
            `
      }
    </section>
  `;
}

function Attempt({ delivery, onRetry }: { delivery: WebhookDelivery; onRetry: (delivery: WebhookDelivery) => void }) {
  const { id, at, collection, seq, webhook_id, attempt, outcome, status, duration_ms, error, next_attempt_at } = delivery;
  return html`
    <tr class=${outcome} data-delivery=${id}>
      <td class="at"><${When} at=${at} /></td>
      <td class="collection">${collection}</td>
      <td class="change-seq">${seq}</td>
      <td class="webhook-id">${webhook_id}</td>
      <td class="attempt">${attempt}</td>
      <td class="outcome"><span class=${`outcome-${outcome}`}>${outcome}</span></td>
      <td class="status">${status ?? 'no answer'}</td>
      <td class="duration">${duration_ms} ms</td>
      <td class="error-text" title=${error ?? ''}>${error ?? ''}</td>
      <td class="next-attempt"><${When} at=${next_attempt_at} /></td>
      <td>
        ${
          outcome === 'failed'
            ? html`<button type="button" aria-label=${`Retry attempt ${attempt} of ${collection} #${seq}`} onClick=${() => onRetry(delivery)}>Retry</button>`
            : null
        }
      </td>
    </tr>
  `;
}
