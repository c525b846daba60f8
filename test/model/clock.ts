/**
 * The clock of per-minute limits (decisions §20) in the tester: a request is counted in the UTC
 * minute the database read when it held it, which the tester cannot see. It reads the minute before
 * and after the request; when they agree (nearly always), that is the request's minute. Across a
 * minute's turn, the model's answer in either minute is taken as long as the product gave one of
 * them, and the minute an admitted request was counted in is read from its task's acceptance. No
 * other request runs meanwhile (the background poller's timer is off), so that minute is the one.
 */
import type { Task } from './money-model.js';
import { minuteOf } from './limits-model.js';
import type { Env } from './commands.js';
import { gql, type Answer, type Real } from './real.js';

export const minuteNow = () => minuteOf(Date.now());

/** The minute a task of the product was accepted in: by its vendor id, or the newest of its project. */
export async function acceptedMinute(real: Real, project: string, ref: string | null): Promise<number> {
  const res = ref
    ? await gql(real, `query($t: ID!) { task(taskId: $t) { acceptedAt } }`, { t: ref })
    : await gql(
        real,
        `query($p: [ID!]) { tasks(filter: { projectIds: $p }, first: 1) { edges { node { acceptedAt } } } }`,
        { p: [project] },
      );
  const data = res.data as
    { task?: { acceptedAt: string } | null; tasks?: { edges: Array<{ node: { acceptedAt: string } }> } } | undefined;
  const at = ref ? data?.task?.acceptedAt : data?.tasks?.edges[0]?.node.acceptedAt;
  if (!at) throw new Error(`the acceptance of ${ref ?? `the newest task of ${project}`}: ${JSON.stringify(res)}`);
  return minuteOf(Date.parse(at));
}

/**
 * One submission, sent by `send`, and the model's answer to it (budgets first, then limits) in the
 * minute it was made; `minute(ref)` is that minute for an admitted one (ref: its vendor id, or null
 * for a task the vendor never numbered, the newest of its project).
 */
export async function submitOnce<T extends Pick<Answer, 'status'>>(
  env: Env,
  real: Real,
  project: string,
  candidate: Pick<Task, 'model' | 'unit' | 'user' | 'tags' | 'hold' | 'tokens'>,
  send: () => Promise<T>,
) {
  const from = minuteNow();
  const res = await send();
  const to = minuteNow();
  const then = env.model.answer(project, candidate, 1, { minute: from });
  const now = env.model.answer(project, candidate, 1, { minute: to });
  // Across a turn the two may differ only by a limit: the product's refusal (429) or admission says which.
  const answer = then === now ? then : res.status === 429 ? 429 : 200;
  const minute = async (ref: string | null) => (from === to ? from : acceptedMinute(real, project, ref));
  return { res, answer, minute };
}

/** A project's per-minute counts of this minute, as the product has them (after a burst across a turn). */
export async function adoptMinuteCounts(env: Env, real: Real, project: string): Promise<void> {
  const minute = minuteNow();
  const res = await gql(real, `query($p: ID!) { limits(projectId: $p) { id use(first: 50) { subject used } } }`, {
    p: project,
  });
  if (minuteNow() !== minute) throw new Error('two minutes turned within one read: the clock jumped');
  for (const l of (res.data?.limits ?? []) as Array<{ id: string; use: Array<{ subject: string; used: number }> }>)
    env.model.limits.adopt(l.id, minute, l.use);
}

/**
 * A sequence starts clear of a UTC day's end (§16): the model is built for today's day and month,
 * and one running across midnight would disagree with the product for the clock's sake, not the
 * books' (a daily budget's period, the month a task counts in). So a sequence that would start
 * within TURN_MARGIN_MS of midnight waits until just past it. Sequences take seconds; two minutes
 * keeps all but a stalled one on one day.
 */
export const TURN_MARGIN_MS = 120_000;

/** How long to wait before starting a sequence at `now`: 0, or until 2 s past the next UTC midnight. */
export function waitForDayTurn(now: number): number {
  const midnight = Math.ceil((now + 1) / 86_400_000) * 86_400_000;
  return midnight - now < TURN_MARGIN_MS ? midnight + 2_000 - now : 0;
}
