/**
 * Operations of an outcome the gateway cannot know and the people who settle it (decisions §4, §10):
 * a submission whose answer is lost, one the vendor refuses, an operator's resolution, and a
 * correction of the ledger.
 */
import { Decimal } from 'decimal.js';
import { today, type Submission } from './catalog-model.js';
import { mediaAsk, pickOf, request, type Cmd, type Env } from './commands.js';
import { submitOnce } from './clock.js';
import { call, expectStatus, gql, simulatorKnobs, type Real } from './real.js';

/**
 * A media submission with the vendor's fault turned on (`fault`: a knob at 1) for it alone, and the
 * model's answer to it (a budget or a limit refuses before the vendor is asked).
 */
async function submitUnder(
  env: Env,
  real: Real,
  ask: { at: number; project: number; body: Submission },
  fault: Record<string, number>,
  allowed: number[],
) {
  const { p, unit, amount, tags } = mediaAsk(env, real, ask.project, ask.body);
  await simulatorKnobs(real, fault);
  try {
    const candidate = { model: ask.body.model, unit, user: null, tags, hold: amount };
    const { res, answer, minute } = await submitOnce(env, real, p.id, candidate, () =>
      call(real, ask.at, 'POST', '/api-platform/v1/generations', { key: p.key, body: request(ask.body) }, allowed),
    );
    return { p, unit, amount, tags, answer, res, minute };
  } finally {
    await simulatorKnobs(real, Object.fromEntries(Object.keys(fault).map((k) => [k, 0])));
  }
}

/** A submission whose answer is lost (the vendor's connection reset): unknown, its hold kept (§4, §10). */
export class LostAnswer implements Cmd {
  constructor(
    readonly at: number,
    readonly project: number,
    readonly body: Submission,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const { p, unit, amount, tags, answer, res, minute } = await submitUnder(
      env,
      real,
      this,
      { resetRate: 1 },
      [502, 504],
    );
    if (answer !== 200) return expectStatus(res, answer, String(this));
    if (res.status !== 502 && res.status !== 504)
      throw new Error(`${this}: expected 502 or 504 (outcome unknown), got ${res.status} ${res.text.slice(0, 200)}`);
    const task = env.model.accept({
      ref: (res.body as { details: { gatewayTaskId: string } }).details.gatewayTaskId,
      project: p.id,
      model: this.body.model,
      unit,
      user: null,
      tags,
      hold: amount,
      viaKey: true,
      minute: await minute(null),
    });
    task.state = 'unknown';
    task.vendor = 'none';
  }
  toString = () => `lost-answer(gw${this.at}, ${['alpha', 'beta'][this.project]}, ${JSON.stringify(this.body)})`;
}

/**
 * The vendor refuses a submission (its 5xx before it made a task): 502, the task's row rejected and
 * its hold released whole; it never ran, so no budget, bar or drill-down counts it (§4).
 */
export class VendorRefuses implements Cmd {
  constructor(
    readonly at: number,
    readonly project: number,
    readonly body: Submission,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const { p, answer, res, minute } = await submitUnder(env, real, this, { errorRate: 1 }, [502]);
    expectStatus(res, answer === 200 ? 502 : answer, String(this));
    if (answer !== 200) return;
    env.refused++;
    // Admitted, then refused by the vendor: a request of its minute for the per-minute limits (§20).
    env.model.limits.counted(p.id, null, await minute(null));
  }
  toString = () => `vendor-refuses(gw${this.at}, ${['alpha', 'beta'][this.project]}, ${JSON.stringify(this.body)})`;
}

/** An operator resolves an unknown task: CHARGE (the hold, or an amount) or RELEASE (§10). */
export class Resolve implements Cmd {
  constructor(
    readonly pick: number,
    readonly outcome: 'CHARGE' | 'RELEASE',
    readonly amount: Decimal | null,
  ) {}
  check = (env: Readonly<Env>) => env.model.tasks.some((t) => env.model.underReview(t));
  async run(env: Env, real: Real) {
    const t = pickOf(
      env.model.tasks.filter((x) => env.model.underReview(x)),
      this.pick,
    );
    const res = await gql(
      real,
      `mutation($t: ID!, $o: TaskResolution!, $a: Decimal) { resolveTask(taskId: $t, outcome: $o, reason: "model", amount: $a) { net } }`,
      { t: t.ref, o: this.outcome, a: this.outcome === 'CHARGE' && this.amount ? this.amount.toFixed() : null },
    );
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    env.model.resolve(t, this.outcome, this.outcome === 'CHARGE' ? this.amount : null);
    env.model.statements.afterResolution(t);
  }
  toString = () => `resolve(#${this.pick}, ${this.outcome}${this.amount ? ` ${this.amount.toFixed()}` : ''})`;
}

/**
 * A correction (§4): now, or dated last month or the month before (refused before the first month
 * of activity, §16); of a task archived with its month (§18), refused 404 until the month is restored.
 */
export class Adjust implements Cmd {
  constructor(
    readonly project: number,
    readonly amount: Decimal,
    readonly withTask: number | null,
    readonly when: 'now' | 'last month' | 'month before last' | '1970',
    readonly credits = false,
  ) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const projects = [...real.sys.projects.map((p) => p.id), real.sys.past.id];
    const projectId = projects[this.project % projects.length]!;
    const task =
      this.withTask === null ? null : (env.model.tasks.filter((t) => t.project === projectId)[this.withTask] ?? null);
    const m = env.model;
    const dated = { now: m.current, 'last month': m.previous, 'month before last': m.older, '1970': '1970-01' }[
      this.when
    ];
    const day = this.when === 'now' ? today() : `${dated}-15`;
    const at = this.when === 'now' ? null : `${day}T12:00:00Z`;
    // A task's correction is in the task's unit; one with no task in either (credits and USD never mix).
    const unit = task ? task.unit : this.credits ? 'CREDITS' : 'USD';
    const res = await gql(
      real,
      `mutation($p: ID!, $u: Unit!, $a: Decimal!, $t: ID, $at: DateTime) { adjustLedger(projectId: $p, unit: $u, amount: $a, reason: "model", taskId: $t, effectiveAt: $at) }`,
      { p: projectId, u: unit, a: this.amount.toFixed(), t: task?.ref ?? null, at: task ? null : at },
    );
    if (task && m.gone.has(task)) {
      const refusal = res.errors?.[0];
      if (refusal?.extensions?.status !== 404 || !/archived/.test(refusal.message))
        throw new Error(`${this}: a task archived with its month must be refused (404): ${JSON.stringify(res)}`);
      return;
    }
    if (!task && at && dated < m.firstMonth()) {
      if (res.errors?.[0]?.extensions?.status !== 400)
        throw new Error(`${this}: a date before the first month of activity must be refused: ${JSON.stringify(res)}`);
      return;
    }
    if (res.errors) throw new Error(`${this}: ${JSON.stringify(res.errors)}`);
    m.adjust(projectId, unit, this.amount, task ? task.acceptedDay : day, task);
  }
  toString = () =>
    `adjust(project ${this.project}, ${this.amount.toFixed()}${this.credits && this.withTask === null ? ' credits' : ''}${this.withTask === null ? '' : `, task #${this.withTask}`}${this.when === 'now' ? '' : `, dated ${this.when}`})`;
}
