import { emailMessage } from './email-message.js';
import { catalogPartName } from '../common/scope-names.js';

/**
 * What a delivery sends (decisions §8), plain TypeScript: the event's body as stored (STANDARD),
 * or a Slack incoming-webhook body a person can read (SLACK); and the retry schedule.
 */

export const EVENT_TYPES = [
  'budget.threshold_crossed',
  'budget.exhausted',
  'limit.refused',
  'task.overrun',
  'task.needs_review',
  'budget.forecast_exceeded',
  'spend.anomaly',
  'spend.digest',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** Sent to one endpoint on request (the console's "send a test event"); no endpoint subscribes to it. */
export const TEST_EVENT = 'webhook.test';

interface BudgetData {
  scope: string;
  scopeValue: string | null;
  modelScope?: string | null;
  modelValue?: string | null;
  user: string | null;
  unit: string;
  period: string;
  limit: string;
  spent: string;
  held: string;
  remaining: string;
}
interface TaskData {
  id: string;
  taskId: string | null;
  model: string;
  unit: string;
  estimate: string;
  hold: string;
  charge: string | null;
  overrun: string | null;
}
interface EventBody {
  type: EventType;
  timestamp: string;
  data: {
    project: { id: string; name: string };
    budget?: BudgetData;
    task?: TaskData;
    threshold?: number;
    reason?: string | null;
  };
}

export type WebhookFormat = 'STANDARD' | 'SLACK' | 'EMAIL';

/** The HTTP body of one delivery: the stored event as it is, or its Slack text. */
export function deliveryBody(format: WebhookFormat, payload: string): string {
  return format === 'SLACK' ? JSON.stringify({ text: slackText(JSON.parse(payload) as EventBody) }) : payload;
}

/**
 * Slack's control characters in text anyone can send (an end user's name, a tag, a project name,
 * a reason): `<!channel>` would notify a channel and `<https://…|label>` would be a disguised link.
 * Slack reads only &, < and > as markup, so those three are escaped (api.slack.com, "Escaping text").
 */
export function slackEscape(text: string | number | null | undefined): string {
  return String(text ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;');
}

/** One or two lines a person reads in a channel, amounts exact, in the event's unit; every value escaped. */
export function slackText(event: EventBody): string {
  if ((event.type as string) === TEST_EVENT)
    return `:white_check_mark: A test event from spendgate for ${slackEscape(event.data.project.name)}: this channel receives its alerts.`;
  if (event.type === 'limit.refused') {
    const { subject, text } = emailMessage(JSON.stringify(event));
    return `:no_entry: *${slackEscape(subject)}*\n${slackEscape(text.split('\n\nEvent ')[0])}`;
  }
  if (EARLY_WARNING.has(event.type)) {
    // The early-warning events read as their email does (every value made one line), escaped for Slack.
    const { subject, text } = emailMessage(JSON.stringify(event));
    return `:crystal_ball: *${slackEscape(subject)}*\n${slackEscape(text.split('\n\nEvent ')[0])}`;
  }
  const e = escapeAll(event.data);
  return plainText(event.type, e);
}

const EARLY_WARNING = new Set<string>(['budget.forecast_exceeded', 'spend.anomaly', 'spend.digest']);

/** Every string of the event's data escaped for Slack (nested objects too). */
function escapeAll<T>(value: T): T {
  if (typeof value === 'string') return slackEscape(value) as T;
  if (Array.isArray(value)) return value.map(escapeAll) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeAll(v)])) as T;
  return value;
}

function plainText(type: EventType, data: EventBody['data']): string {
  const event = { type, data };
  const { project, budget, task } = event.data;
  const where = `project *${project.name}*`;
  if (budget) {
    const scope =
      budget.scope === 'PROJECT'
        ? ''
        : ` (${budget.scope === 'EACH_USER' ? (budget.user ? `each user: ${budget.user}` : 'each user') : `${budget.scope.toLowerCase().replace('_', ' ')} ${budget.scopeValue}`})`;
    const part = budget.modelScope ? ` for ${catalogPartName(budget.modelScope, budget.modelValue ?? null)}` : '';
    const name = `${budget.period.toLowerCase()} ${budget.unit} budget${part}${scope} of ${where}`;
    const balance = `spent ${budget.spent}, held ${budget.held}, ${budget.remaining} of ${budget.limit} ${budget.unit} left`;
    if (event.type === 'budget.exhausted' && (event.data as { capped?: boolean }).capped) {
      return `:no_entry: The ${name} has refused more end users this period than are announced one by one; further refusals are counted, not announced.`;
    }
    return event.type === 'budget.exhausted'
      ? `:no_entry: The ${name} is exhausted: it refused a request. ${balance}.`
      : `:warning: The ${name} crossed ${event.data.threshold}%: ${balance}.`;
  }
  if (task) {
    const about = `task ${task.taskId ?? task.id} (${task.model}) in ${where}`;
    return event.type === 'task.overrun'
      ? `:money_with_wings: ${about} was charged ${task.charge} ${task.unit}, ${task.overrun} above its hold of ${task.hold}.`
      : `:mag: ${about} needs review: ${event.data.reason ?? 'see the review queue'}.`;
  }
  return `${event.type} in ${where}`;
}

/**
 * When to try again after `attempts` failed attempts: exponential from `baseMs` (×2 each time,
 * at most an hour), with "full jitter" in [half, whole] so that receivers coming back are not
 * hit by every sender at once. `random` is injectable for tests.
 */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(3_600_000, baseMs * 2 ** Math.min(attempts - 1, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
