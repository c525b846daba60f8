/**
 * Alerts: webhook endpoints and their recent deliveries with each attempt, of the projects the
 * caller may read (a project key sees none). Those who manage a project's webhooks may disable,
 * enable and redeliver; Redeliver sends an event again with the same webhook-id.
 */
import { useMutation, useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText } from '../api';
import { may, useSigned } from '../app';
import { dateTime } from '../format';
import { Empty } from '../parts/empty';

const ALERTS = `query Alerts($status: DeliveryStatus) {
  webhookEndpoints { id url format events projectId enabled createdAt }
  webhookDeliveries(first: 50, status: $status) {
    edges { node { id endpointId eventType eventId status attempts createdAt deliveredAt nextAttemptAt lastStatusCode lastError } }
  }
}`;
const REDELIVER = `mutation Redeliver($id: ID!) { redeliverWebhook(deliveryId: $id) }`;
const ENABLE = `mutation Enable($id: ID!, $enabled: Boolean!) { setWebhookEndpointEnabled(id: $id, enabled: $enabled) { id enabled } }`;

export function Alerts() {
  const { viewer } = useSigned();
  const [status, setStatus] = useState('');
  const [{ data, error }, reload] = useQuery<any>({ query: ALERTS, variables: { status: status || null }, pause: viewer.kind === 'PROJECT_KEY' });
  const [redelivered, redeliver] = useMutation(REDELIVER);
  const [, enable] = useMutation(ENABLE);
  const manages = may(viewer, 'webhooks');
  if (viewer.kind === 'PROJECT_KEY') return <Empty>Alerts (signed webhooks) are set up by the project's lead or an owner: a project key cannot see endpoints or deliveries.</Empty>;
  if (error) return <p class="error" role="alert">{errorText(error)}</p>;
  if (!data) return <p class="loading">Loading…</p>;
  const endpoints = data.webhookEndpoints as any[];
  const deliveries = (data.webhookDeliveries.edges as any[]).map((e) => e.node);
  const urlOf = (id: string) => endpoints.find((e) => e.id === id)?.url ?? id;
  return (
    <section data-ready="alerts">
      <h1>Alerts</h1>
      {endpoints.length === 0 ? (
        <Empty>
          No webhook endpoint yet. Add one with GraphQL:{' '}
          <code>{'mutation { createWebhookEndpoint(url: "https://hooks.example.com/spend") { secret endpoint { id } } }'}</code> (format: SLACK for a Slack incoming webhook).
        </Empty>
      ) : (
        <table data-testid="endpoints">
          <thead>
            <tr>
              <th>Endpoint</th>
              <th>Format</th>
              <th>Events</th>
              <th>Project</th>
              <th>State</th>
            </tr>
          </thead>
          <tbody>
            {endpoints.map((e) => (
              <tr>
                <td>{e.url}</td>
                <td>{e.format}</td>
                <td>{e.events.length ? e.events.join(', ') : 'all'}</td>
                <td>{e.projectId ?? 'every project'}</td>
                <td>
                  {e.enabled ? 'enabled' : 'disabled'}{' '}
                  {manages && <button type="button" class="link" onClick={async () => (await enable({ id: e.id, enabled: !e.enabled }), reload({ requestPolicy: 'network-only' }))}>
                    {e.enabled ? 'disable' : 'enable'}
                  </button>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="page-head">
        <h2>Recent deliveries</h2>
        <label>
          Status{' '}
          <select name="deliveryStatus" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            <option value="PENDING">pending</option>
            <option value="DELIVERED">delivered</option>
            <option value="FAILED">failed</option>
          </select>
        </label>
      </div>
      {redelivered.error && <p class="error">{errorText(redelivered.error)}</p>}
      {deliveries.length === 0 ? (
        <p class="none">No deliveries{status ? ` with status ${status.toLowerCase()}` : ''}.</p>
      ) : (
        <table data-testid="deliveries">
          <thead>
            <tr>
              <th>Created (UTC)</th>
              <th>Event</th>
              <th>Endpoint</th>
              <th>Status</th>
              <th>Attempts</th>
              <th>Last answer</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <tr>
                <td>{dateTime(d.createdAt)}</td>
                <td>{d.eventType}</td>
                <td>{urlOf(d.endpointId)}</td>
                <td>
                  {d.status.toLowerCase()}
                  {d.status === 'PENDING' && d.nextAttemptAt ? `, next ${dateTime(d.nextAttemptAt)}` : ''}
                </td>
                <td class="num">{d.attempts}</td>
                <td>{d.lastStatusCode ?? d.lastError ?? '—'}</td>
                <td>
                  {manages && (
                    <button type="button" class="link" onClick={async () => (await redeliver({ id: d.id }), reload({ requestPolicy: 'network-only' }))}>
                      redeliver
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
