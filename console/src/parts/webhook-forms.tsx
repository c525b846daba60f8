/**
 * Adding a webhook endpoint from the console (its signing secret shown once), for those whose role
 * manages webhooks; the API's refusal (a private address, an unknown event) is shown as it says it.
 */
import { useMutation } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText } from '../api';
import { NewSecret } from './new-secret';

const CREATE = `mutation CreateEndpoint($url: String!, $events: [String!], $projectId: ID, $format: WebhookFormat!) {
  createWebhookEndpoint(url: $url, events: $events, projectId: $projectId, format: $format) { secret endpoint { id } }
}`;
const EVENTS = [
  'budget.threshold_crossed',
  'budget.exhausted',
  'limit.refused',
  'task.overrun',
  'task.needs_review',
  'budget.forecast_exceeded',
  'spend.anomaly',
  'spend.digest',
];

export function NewEndpoint({ projects, onDone }: { projects: { id: string; name: string }[]; onDone(): void }) {
  const [result, create] = useMutation<{ createWebhookEndpoint: { secret: string } }>(CREATE);
  const [problem, setProblem] = useState('');
  const [secret, setSecret] = useState('');
  return (
    <>
      {secret && (
        <NewSecret
          secret={secret}
          what="signing secret (verify each delivery's webhook-signature with it)"
          onDone={() => setSecret('')}
        />
      )}
      <details class="card">
        <summary>Add an endpoint</summary>
        <form
          class="inline-form new-endpoint"
          aria-label="Add a webhook endpoint"
          onSubmit={async (e) => {
            e.preventDefault();
            const form = e.currentTarget;
            const field = (name: string) =>
              (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement).value.trim();
            const events = EVENTS.filter((ev) => (form.elements.namedItem(`event-${ev}`) as HTMLInputElement).checked);
            const answer = await create({
              url: field('url'),
              format: field('format'),
              projectId: field('project') || null,
              events: events.length ? events : null,
            });
            setProblem(answer.error ? errorText(answer.error) : '');
            if (answer.data) {
              setSecret(answer.data.createWebhookEndpoint.secret);
              form.reset();
              onDone();
            }
          }}
        >
          <label>
            URL{' '}
            <input
              name="url"
              required
              size={40}
              placeholder="https://hooks.example.com/spend or mailto:finance@example.com"
            />
          </label>
          <label>
            Format{' '}
            <select name="format">
              <option value="STANDARD">signed JSON (Standard Webhooks)</option>
              <option value="SLACK">Slack incoming webhook</option>
              <option value="EMAIL">email (mailto:)</option>
            </select>
          </label>
          <label>
            Project{' '}
            <select name="project">
              <option value="">every project</option>
              {projects.map((p) => (
                <option value={p.id}>{p.name}</option>
              ))}
            </select>
          </label>
          <fieldset>
            <legend>Events (none ticked: all but the weekly digest)</legend>
            {EVENTS.map((ev) => (
              <label class="check">
                <input type="checkbox" name={`event-${ev}`} /> {ev}
              </label>
            ))}
          </fieldset>
          <button type="submit" disabled={result.fetching}>
            Add endpoint
          </button>
          {problem && (
            <p class="error" role="alert">
              {problem}
            </p>
          )}
        </form>
      </details>
    </>
  );
}
