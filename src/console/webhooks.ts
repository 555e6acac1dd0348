// The account's webhooks (docs/webhooks.md): each with its settings and how its deliveries stand
// (openapi.yaml, WebhookState), enabled and disabled here, made here with the secret shown once, and,
// chosen, its delivery log (deliveries.ts). Only an admin key may read them (x-rowbase-scope): another
// key's 403 is said in words, in place of the list.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { type Api, type CreatedWebhook, describe, type NewWebhook, type Webhook } from './api.ts';
import { DeliveryLog } from './deliveries.ts';
import { ColumnsWithActions, Modal, Refused, Status, useAdminList, When } from './parts.ts';

const EVENTS = ['insert', 'update', 'delete'] as const;

export function WebhooksView({ api }: { api: Api }) {
  const { list: webhooks, setList: setWebhooks, refused, error, setError, reload: read } = useAdminList(() => api.webhooks());
  const [chosen, setChosen] = useState<number>();
  // Moved on by every read of the list, so that the chosen webhook's log is read again from its newest page.
  const [reads, setReads] = useState(0);
  const [made, setMade] = useState<CreatedWebhook>();

  const reload = async () => {
    if (await read()) setReads((count) => count + 1);
  };

  const toggle = async ({ id, enabled }: Webhook) => {
    try {
      const changed = await api.enableWebhook(id, !enabled);
      setWebhooks((listed) => listed?.map((webhook) => (webhook.id === id ? changed : webhook)));
      setError('');
    } catch (failure) {
      setError(describe(failure));
    }
  };

  if (refused) {
    return html`
      <section class="webhooks" aria-labelledby="webhooks-title">
        <h2 id="webhooks-title">Webhooks</h2>
        <${Refused} sentence="Only an admin key may see and manage the account's webhooks, and this key is not one." detail=${refused} />
      </section>
    `;
  }
  const webhook = webhooks?.find(({ id }) => id === chosen);
  return html`
    <section class="webhooks" aria-labelledby="webhooks-title">
      <header class="rows-head">
        <h2 id="webhooks-title">Webhooks</h2>
        <button type="button" onClick=${reload}>Refresh</button>
      </header>
      <p class="hint">Each webhook POSTs the changes of the account's collections to its URL, signed, until each is acknowledged.</p>
      <${NewWebhookForm} api=${api} onMade=${(created: CreatedWebhook) => {
        setMade(created);
        reload();
      }} />
      <${Status} error=${error} />
      ${
        webhooks === undefined
          ? null
          : webhooks.length === 0
            ? html`<p class="empty">No webhook yet.</p>`
            : html`
              <div class="table-scroll">
                <table class="webhook-table">
                  <caption>${webhooks.length} ${webhooks.length === 1 ? 'webhook' : 'webhooks'}, oldest first</caption>
                  <thead><${ColumnsWithActions} columns=${['URL', 'Changes', 'Status', 'Pending', 'Failing since', 'Dropped', 'Last delivery']} /></thead>
                  <tbody>
                    ${webhooks.map(
                      (each) => html`<${WebhookRow}
                        key=${each.id}
                        webhook=${each}
                        chosen=${each.id === chosen}
                        onChoose=${() => setChosen(each.id)}
                        onToggle=${() => toggle(each)}
                      />`,
                    )}
                  </tbody>
                </table>
              </div>
            `
      }
      ${webhook ? html`<${DeliveryLog} key=${`${webhook.id}:${reads}`} api=${api} webhook=${webhook} />` : null}
      ${made ? html`<${MadeWebhook} webhook=${made} close=${() => setMade(undefined)} />` : null}
    </section>
  `;
}

interface RowProps {
  webhook: Webhook;
  chosen: boolean;
  onChoose: () => void;
  onToggle: () => void;
}

function WebhookRow({ webhook, chosen, onChoose, onToggle }: RowProps) {
  const { id, url, description, collections, events, filter, enabled, disabled_reason, state } = webhook;
  const last = state.last_delivery;
  return html`
    <tr data-webhook=${id} class=${chosen ? 'chosen' : ''}>
      <td class="url">
        <span class="line">${url}</span>
        ${description ? html`<span class="line hint description">${description}</span>` : null}
      </td>
      <td>
        <span class="line collections">${collections === null ? 'all' : collections.join(', ')}</span>
        <span class="line events">${events.join(', ')}</span>
        ${filter ? html`<span class="line filter">where ${JSON.stringify(filter)}</span>` : null}
      </td>
      <td class="status">${enabled ? 'Enabled' : `Disabled: ${disabled_reason}`}</td>
      <td class="pending">${state.pending}</td>
      <td class="failing-since"><${When} at=${state.failing_since} /></td>
      <td class="dropped">${state.dropped}</td>
      <td class="last-delivery">
        ${
          last
            ? html`<span class=${`line outcome-${last.outcome}`}>${last.outcome}, ${last.status ?? 'no answer'}</span>
                <span class="line"><${When} at=${last.at} /></span>`
            : 'none yet'
        }
      </td>
      <td>
        <div class="buttons">
          <button type="button" aria-pressed=${chosen} aria-label=${`Deliveries of webhook ${id}`} onClick=${onChoose}>Deliveries</button>
          <button type="button" aria-label=${`${enabled ? 'Disable' : 'Enable'} webhook ${id}`} onClick=${onToggle}>${enabled ? 'Disable' : 'Enable'}</button>
        </div>
      </td>
    </tr>
  `;
}

/** Makes a webhook of a URL, for the collections named (every one without) and the kinds ticked. */
function NewWebhookForm({ api, onMade }: { api: Api; onMade: (webhook: CreatedWebhook) => void }) {
  const [error, setError] = useState('');
  const make = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const data = new FormData(form);
    const settings: NewWebhook = { url: String(data.get('url') ?? '').trim() };
    const description = String(data.get('description') ?? '').trim();
    if (description) settings.description = description;
    const collections = String(data.get('collections') ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    if (collections.length > 0) settings.collections = collections;
    // No kind ticked is sent as none, for the service to refuse in its words.
    const events = EVENTS.filter((kind) => data.get(kind) === 'on');
    if (events.length < EVENTS.length) settings.events = events;
    try {
      const made = await api.createWebhook(settings);
      form.reset();
      setError('');
      onMade(made);
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return html`
    <details class="new-webhook">
      <summary>New webhook…</summary>
      <form class="controls" onSubmit=${make}>
        <div class="field">
          <label for="webhook-url">URL</label>
          <input id="webhook-url" name="url" type="url" required placeholder="https://example.com/rowbase" spellcheck=${false} />
        </div>
        <div class="field">
          <label for="webhook-description">Description</label>
          <input id="webhook-description" name="description" placeholder="optional" />
        </div>
        <div class="field">
          <label for="webhook-collections">Collections</label>
          <input id="webhook-collections" name="collections" placeholder="all; or notes,orders" spellcheck=${false} />
        </div>
        <fieldset class="events-choice">
          <legend>Changes</legend>
          ${EVENTS.map((kind) => html`<label key=${kind} class="check"><input type="checkbox" name=${kind} defaultChecked /> ${kind}</label>`)}
        </fieldset>
        <button type="submit">Make webhook</button>
      </form>
      <${Status} error=${error} />
    </details>
  `;
}

/** The new webhook's secret, which the service shows this once. */
function MadeWebhook({ webhook, close }: { webhook: CreatedWebhook; close: () => void }) {
  return html`
    <${Modal} title="Webhook made: copy its secret now" onClose=${close}>
      <p>Deliveries to <strong>${webhook.url}</strong> are signed with this secret (Standard Webhooks). This is the only time it is shown: keep it where the receiver can read it.</p>
      <label for="webhook-secret">Secret</label>
      <input id="webhook-secret" class="secret" readonly value=${webhook.secret} onFocus=${(event: Event) => (event.target as HTMLInputElement).select()} />
      <div class="buttons">
        <button type="button" onClick=${close} autofocus>I have copied it</button>
      </div>
    <//>
  `;
}
