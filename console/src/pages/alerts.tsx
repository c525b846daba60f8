/**
 * Alerts: webhook endpoints and their recent deliveries with each attempt, of the projects the
 * caller may read (a project key sees none). Those who manage a project's webhooks may disable,
 * enable and redeliver; Redeliver sends an event again with the same webhook-id.
 */
import { useMutation, useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText } from '../api';
import { may, useSigned } from '../signed';
import { dateTime } from '../format';
import { Empty } from '../parts/empty';
import { projectName, useProjects } from '../parts/project-picker';
import { NewEndpoint } from '../parts/webhook-forms';

const ALERTS = `query Alerts($status: DeliveryStatus) {
  webhookEndpoints { id url format events projectId enabled createdAt }
  webhookDeliveries(first: 50, status: $status) {
    edges { node { id endpointId eventType eventId status attempts createdAt deliveredAt nextAttemptAt lastStatusCode lastError } }
  }
}`;
interface Endpoint {
  id: string;
  url: string;
  format: string;
  events: string[];
  projectId: string | null;
  enabled: boolean;
  createdAt: string;
}
interface Delivery {
  id: string;
  endpointId: string;
  eventType: string;
  eventId: string;
  status: string;
  attempts: number;
  createdAt: string;
  deliveredAt: string | null;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
}
interface AlertsData {
  webhookEndpoints: Endpoint[];
  webhookDeliveries: { edges: Array<{ node: Delivery }> };
}
const REDELIVER = `mutation Redeliver($id: ID!) { redeliverWebhook(deliveryId: $id) }`;
const ENABLE = `mutation Enable($id: ID!, $enabled: Boolean!) { setWebhookEndpointEnabled(id: $id, enabled: $enabled) { id enabled } }`;
const TEST = `mutation Test($id: ID!) { sendTestWebhook(id: $id) }`;

export function Alerts() {
  const { viewer } = useSigned();
  const [status, setStatus] = useState('');
  const [{ data, error }, reload] = useQuery<AlertsData>({
    query: ALERTS,
    variables: { status: status || null },
    pause: viewer.kind === 'PROJECT_KEY',
  });
  const [redelivered, redeliver] = useMutation(REDELIVER);
  const [enabled, enable] = useMutation(ENABLE);
  const [tested, test] = useMutation(TEST);
  const [sent, setSent] = useState('');
  const projects = useProjects();
  const manages = may(viewer, 'webhooks');
  const refresh = () => reload({ requestPolicy: 'network-only' });
  if (viewer.kind === 'PROJECT_KEY')
    return (
      <Empty>
        Alerts (signed webhooks) are set up by the project's lead or an owner: a project key cannot see endpoints or
        deliveries.
      </Empty>
    );
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data) return <p class="loading">Loading…</p>;
  const endpoints = data.webhookEndpoints;
  const deliveries = data.webhookDeliveries.edges.map((e) => e.node);
  const urlOf = (id: string) => endpoints.find((e) => e.id === id)?.url ?? id;
  return (
    <section data-ready="alerts">
      <h1>Alerts</h1>
      {manages && <NewEndpoint projects={projects} onDone={refresh} />}
      {(enabled.error || tested.error) && (
        <p class="error" role="alert">
          {errorText(enabled.error ?? tested.error)}
        </p>
      )}
      {sent && (
        <p class="ok" role="status">
          {sent}
        </p>
      )}
      {endpoints.length === 0 ? (
        <Empty>
          {manages
            ? 'No webhook endpoint yet: add one above (a Slack incoming webhook, a signed JSON receiver or an email address).'
            : "No webhook endpoint yet. An owner or a project's lead can add one."}
        </Empty>
      ) : (
        <div class="scroll">
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
                <tr data-endpoint={e.id}>
                  <td class="wrap">{e.url}</td>
                  <td>{e.format}</td>
                  <td>{e.events.length ? e.events.join(', ') : 'all'}</td>
                  <td>{e.projectId ? projectName(projects, e.projectId) : 'every project'}</td>
                  <td>
                    {e.enabled ? 'enabled' : 'disabled'}{' '}
                    {manages && (
                      <button
                        type="button"
                        class="link"
                        onClick={async () => (await enable({ id: e.id, enabled: !e.enabled }), refresh())}
                      >
                        {e.enabled ? 'disable' : 'enable'}
                      </button>
                    )}
                    {manages && e.enabled && (
                      <>
                        {' · '}
                        <button
                          type="button"
                          class="link"
                          onClick={async () => {
                            const answer = await test({ id: e.id });
                            setSent(answer.error ? '' : 'Test event queued: its delivery shows below.');
                            refresh();
                          }}
                        >
                          send a test event
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="page-head">
        <h2>Recent deliveries</h2>
        <label>
          Status{' '}
          <select
            name="deliveryStatus"
            value={status}
            onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}
          >
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
        <div class="scroll">
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
                      <button
                        type="button"
                        class="link"
                        onClick={async () => (await redeliver({ id: d.id }), reload({ requestPolicy: 'network-only' }))}
                      >
                        redeliver
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
