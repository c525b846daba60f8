/**
 * What a delivery sends (decisions §8), plain TypeScript: the event's body as stored (STANDARD),
 * or a Slack incoming-webhook body a person can read (SLACK); and the retry schedule.
 */

export const EVENT_TYPES = ['budget.threshold_crossed', 'budget.exhausted', 'task.overrun', 'task.needs_review'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

interface BudgetData {
  scope: string;
  scopeValue: string | null;
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
  data: { project: { id: string; name: string }; budget?: BudgetData; task?: TaskData; threshold?: number; reason?: string | null };
}

export type WebhookFormat = 'STANDARD' | 'SLACK';

/** The HTTP body of one delivery: the stored event as it is, or its Slack text. */
export function deliveryBody(format: WebhookFormat, payload: string): string {
  return format === 'SLACK' ? JSON.stringify({ text: slackText(JSON.parse(payload) as EventBody) }) : payload;
}

/** One or two lines a person reads in a channel, amounts exact, in the event's unit. */
export function slackText(event: EventBody): string {
  const { project, budget, task } = event.data;
  const where = `project *${project.name}*`;
  if (budget) {
    const scope = budget.scope === 'PROJECT' ? '' : ` (${budget.scope === 'EACH_USER' ? `each user: ${budget.user}` : `${budget.scope.toLowerCase().replace('_', ' ')} ${budget.scopeValue}`})`;
    const name = `${budget.period.toLowerCase()} ${budget.unit} budget${scope} of ${where}`;
    const balance = `spent ${budget.spent}, held ${budget.held}, ${budget.remaining} of ${budget.limit} ${budget.unit} left`;
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
