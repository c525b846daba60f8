/**
 * An event as an email a person reads (decisions §8, §15), plain TypeScript: a subject and a plain
 * text body, amounts exact and in their unit, every event kind (the weekly digest as a short
 * report). Text a client controls (an end user, a tag, a project name) is made harmless for mail:
 * no line breaks or control characters (a header cannot be injected through the subject), and it is
 * sent as text/plain only, so nothing in it is markup.
 */
import type { AmountText } from '../pricing/money.js';
import { catalogPartName, LIMIT_KIND_NAMES } from '../common/scope-names.js';

interface Body {
  type: string;
  timestamp: string;
  data: Record<string, unknown> & { project?: { id: string; name: string } };
}

type Budget = {
  scope: string;
  scopeValue: string | null;
  user: string | null;
  /** A budget on part of the catalog (decisions §20). */
  modelScope?: string | null;
  modelValue?: string | null;
  unit: string;
  period: string;
  limit: string;
  spent: string;
  held: string;
  remaining: string;
};
type Task = {
  id: string;
  taskId: string | null;
  model: string;
  unit: string;
  hold: string;
  charge: string | null;
  overrun: string | null;
};
type Total = AmountText & { tasks?: number };

/** One line of text from anything a client sent: control characters and line breaks become spaces. */
export function mailSafe(value: unknown): string {
  return (
    String(value ?? '')
      // eslint-disable-next-line no-control-regex -- removing control characters is the point
      .replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ')
      .slice(0, 500)
  );
}

export function emailMessage(payload: string): { subject: string; text: string } {
  const event = JSON.parse(payload) as Body;
  const d = event.data;
  const project = d.project ? `project ${mailSafe(d.project.name)}` : 'all projects';
  const lines: string[] = [];
  let subject: string;
  const budget = d.budget as Budget | undefined;
  const budgetName = budget
    ? `${budget.period.toLowerCase()} ${budget.unit} budget${budget.modelScope ? ` for ${mailSafe(catalogPartName(budget.modelScope, budget.modelValue ?? null))}` : ''}${scopeText(budget)} of ${project}`
    : '';
  const balance = budget
    ? `Spent ${budget.spent} ${budget.unit}, held ${budget.held}, ${budget.remaining} of ${budget.limit} left.`
    : '';
  switch (event.type) {
    case 'budget.threshold_crossed':
      subject = `Budget at ${d.threshold as number}%: ${budgetName}`;
      lines.push(`The ${budgetName} crossed ${d.threshold as number}% of its limit.`, balance);
      break;
    case 'budget.exhausted':
      subject = `Budget exhausted: ${budgetName}`;
      lines.push(
        d.capped
          ? `The ${budgetName} has refused more end users this period than are announced one by one.`
          : `The ${budgetName} refused a request: it is exhausted.`,
        balance,
      );
      break;
    case 'limit.refused': {
      const l = d.limit as {
        kind: string;
        amount: string;
        scope: string;
        scopeValue: string | null;
        user: string | null;
        used: string;
      };
      const what = LIMIT_KIND_NAMES[l.kind] ?? l.kind;
      const scope = scopeText(l);
      subject = `Limit reached: ${l.amount} ${what}${scope} of ${project}`;
      lines.push(
        d.capped
          ? `The limit of ${l.amount} ${what}${scope} of ${project} has refused more end users in this window than are announced one by one.`
          : `The limit of ${l.amount} ${what}${scope} of ${project} refused a request with 429 (use then: ${l.used}). Nothing was held or charged for it.`,
      );
      break;
    }
    case 'budget.forecast_exceeded':
      subject = `Forecast over budget: ${budgetName}`;
      lines.push(
        `At the current rate the ${budgetName} will reach ${d.forecastSpend as string} ${budget?.unit ?? ''} by the end of its period, over its limit of ${budget?.limit ?? ''}.`,
        d.runsOutAt ? `It runs out on ${(d.runsOutAt as string).slice(0, 16).replace('T', ' ')} UTC.` : '',
        balance,
      );
      break;
    case 'spend.anomaly': {
      const scope = d.scope as { kind: string; value: string | null };
      const what =
        scope.kind === 'project'
          ? project
          : `${scope.kind === 'apiKey' ? 'API key' : 'end user'} ${mailSafe(scope.value)} of ${project}`;
      const baseline = d.baseline as { median: string; days: number };
      subject = `Unusual spend: ${what}`;
      lines.push(
        `${what} spent ${d.spend as string} ${d.unit as string} in the hour from ${(d.hour as string).slice(0, 16).replace('T', ' ')} UTC,`,
        `${d.multiple as string} times its usual ${baseline.median} ${d.unit as string} for that hour (median of the last ${baseline.days} days).`,
        'A runaway loop, a leaked key or a new batch job? The task list shows what ran.',
      );
      break;
    }
    case 'task.overrun':
    case 'task.needs_review': {
      const t = d.task as Task;
      const about = `Task ${mailSafe(t.taskId ?? t.id)} (${mailSafe(t.model)}) of ${project}`;
      subject = event.type === 'task.overrun' ? `Overrun: ${about}` : `Needs review: ${about}`;
      lines.push(
        event.type === 'task.overrun'
          ? `${about} was charged ${t.charge} ${t.unit}, ${t.overrun} above its hold of ${t.hold}.`
          : `${about} needs a person's look: ${mailSafe(d.reason ?? 'see the review queue')}.`,
      );
      break;
    }
    case 'spend.digest':
      subject = `Weekly spend, ${(d.week as { from: string }).from.slice(0, 10)} to ${(d.week as { to: string }).to.slice(0, 10)}`;
      lines.push(...digestLines(d as unknown as Digest));
      break;
    case 'webhook.test':
      subject = `Test event from spendgate (${project})`;
      lines.push(`This address receives spendgate's alerts for ${project}. Nothing needs doing.`);
      break;
    default:
      subject = `${mailSafe(event.type)} in ${project}`;
      lines.push(JSON.stringify(d));
  }
  const text = [
    ...lines.filter((l) => l !== ''),
    '',
    `Event ${mailSafe(d.eventId)} at ${event.timestamp}. Sent by spendgate.`,
  ].join('\n');
  return { subject: mailSafe(subject).slice(0, 200), text };
}

/** " (each user: u-7)", " (api key ab12…)", or nothing for the whole project; every value mail-safe. */
function scopeText(s: { scope: string; scopeValue: string | null; user: string | null }): string {
  if (s.scope === 'PROJECT') return '';
  if (s.scope === 'EACH_USER') return ` (each user${s.user ? `: ${mailSafe(s.user)}` : ''})`;
  return ` (${s.scope.toLowerCase().replace('_', ' ')} ${mailSafe(s.scopeValue)})`;
}

interface Digest {
  week: { from: string; to: string };
  projects: Array<{ name: string; totals: Total[] }>;
  topKeys: Array<{ key: string; name: string | null; unit: string; amount: string }>;
  topUsers: Array<{ project: string; user: string; unit: string; amount: string }>;
  budgetsAtRisk: Array<{
    project: string;
    scope: string;
    scopeValue: string | null;
    modelScope?: string | null;
    modelValue?: string | null;
    unit: string;
    period: string;
    limit: string;
    forecastSpend: string;
    runsOutAt: string | null;
  }>;
}

function digestLines(d: Digest): string[] {
  const money = (m: Total[]) =>
    m.map((t) => `${t.amount} ${t.unit}${t.tasks !== undefined ? ` (${t.tasks} tasks)` : ''}`).join(', ');
  return [
    'Spend by project (credits and USD are never added together):',
    ...(d.projects.length ? d.projects.map((p) => `  ${mailSafe(p.name)}: ${money(p.totals)}`) : ['  none']),
    '',
    'Top API keys:',
    ...(d.topKeys.length
      ? d.topKeys.map((k) => `  ${mailSafe(k.key)}${k.name ? ` (${mailSafe(k.name)})` : ''}: ${k.amount} ${k.unit}`)
      : ['  none']),
    '',
    'Top end users:',
    ...(d.topUsers.length
      ? d.topUsers.map((u) => `  ${mailSafe(u.user)} of ${mailSafe(u.project)}: ${u.amount} ${u.unit}`)
      : ['  none']),
    '',
    'Budgets at risk (forecast past the limit):',
    ...(d.budgetsAtRisk.length
      ? d.budgetsAtRisk.map(
          (b) =>
            `  ${mailSafe(b.project)}, ${b.period.toLowerCase()} ${b.unit} budget${b.modelScope ? ` for ${mailSafe(catalogPartName(b.modelScope, b.modelValue ?? null))}` : ''}${b.scope === 'PROJECT' ? '' : ` (${b.scope.toLowerCase()} ${mailSafe(b.scopeValue)})`}: forecast ${b.forecastSpend} of ${b.limit}${b.runsOutAt ? `, runs out ${b.runsOutAt.slice(0, 10)}` : ''}`,
        )
      : ['  none']),
  ];
}
