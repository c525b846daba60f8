/**
 * The reference model of the money (decisions §16), plain TypeScript, written from
 * ../shared/spec/decisions.md §3–§14 and the vendor's price list, not from the SQL. It answers what
 * every figure should be after any sequence of operations: each budget's spent and held, each
 * task's net, what a month's report counts, which vendor differences are open.
 *
 * What it knows (and what the tester generates): media routes priced exactly by the spec's table
 * (§3, catalog-model.ts), hard and soft budgets of project, end-user and tag scope, daily, weekly,
 * monthly and lifetime (§4, §7: a period counts what is dated in it, to the day), admission that
 * refuses when spent + held + estimate would pass a hard limit (§4), settlement exactly once (ready
 * charges, failed releases), unknown outcomes held for review and resolved by an operator (§10),
 * adjustments (§4), month close and reopen with prior-period items (§13) over three months (now,
 * last, the one before), the month before last archived and restored (§18), vendor statements with
 * their classes, accepts and disputes (§14, statements-model.ts), bounds and dates (§16), budgets on
 * one model, family or kind of the catalog, and limits on tasks in flight and requests a minute (§20, limits-model.ts).
 */
import { Decimal } from 'decimal.js';
import {
  inPart,
  lastDayOf,
  monthBefore,
  monthOf,
  SEEDREAM_RATES,
  today,
  weekOf,
  type Day,
  type Month,
  type Part,
  type Scope,
  type Unit,
} from './catalog-model.js';
import type { Contract } from './contract-model.js';
import { inFlight, LimitsModel, minuteOf } from './limits-model.js';
import { RatesModel, type Converted, type Currency } from './rates-model.js';
import { StatementsModel } from './statements-model.js';

/** A budget's period, calendar-aligned in UTC (decisions §4): a day, a week from Monday, a month, or ever. */
export type Period = 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'LIFETIME';

export interface Budget {
  id: string;
  project: string;
  unit: Unit;
  period: Period;
  hard: boolean;
  scope: Scope;
  value: string | null;
  /** on part of the catalog only (§20), or null */
  part: Part | null;
  limit: Decimal;
}

/** "Not found" answers in a row that make a held task unknown (the product's task-store.ts). */
const MISSING_POLLS = 3;

export type TaskState = 'held' | 'settled' | 'failed' | 'unknown';
export interface Task {
  /** the vendor's task id, or gw-N for a task the vendor never numbered to us */
  ref: string;
  project: string;
  /** the model id (CATALOG's): what a budget on part of the catalog counts it by (§20) */
  model: string;
  unit: Unit;
  user: string | null;
  tags: string[];
  /** submitted with its project's API key (tasks of last month came another way, with none) */
  viaKey?: boolean;
  hold: Decimal;
  state: TaskState;
  /** the day its hold is dated: its acceptance's, or the first of the first open month once that closed (§13) */
  holdDay: Day;
  acceptedDay: Day;
  resolved: boolean;
  /** what the vendor will answer to a poll ('stalled': processing, forever; 'forgotten': 404, forever) */
  vendor: 'processing' | 'ready' | 'failed' | 'stalled' | 'forgotten' | 'none';
  /** polls the vendor answered "not found" while the task was held */
  missingPolls?: number;
  /**
   * Its next poll by the poller is at least POLL_INTERVAL_MS away (ten minutes in the model): a
   * poll round polled it, or the vendor answered a client's poll "not found". Until then, a task in
   * flight is first polled a second after its acceptance.
   */
  pollLater?: boolean;
  /** a chat task's charge as the vendor's usage prices it (null: no usage, settled at its estimate) */
  chatCharge?: Decimal | null;
  /** a chat's tokens: estimated at admission (the prompt's estimate + max_tokens), and as its usage counts them */
  tokens?: number;
  chatTokens?: number | null;
  /** settled and under review: an overrun, or a chat task settled at its estimate (§6, §10) */
  review: boolean;
}

/** When and how a hold is placed. */
export interface HoldAt {
  /** the day it is dated: today by default */
  day?: Day;
  /** whether through an API key: it is by default */
  viaKey?: boolean;
  /** the UTC minute its request is counted in by per-minute limits (§20): the present one by default */
  minute?: number;
}

/** A money movement posted in the ledger (charges and adjustments; holds are the tasks'). */
export interface Posting {
  project: string;
  unit: Unit;
  amount: Decimal;
  /** the day it is effective: where the ledger dates it (§13), which a budget's period counts it by */
  day: Day;
  task: Task | null;
  kind: 'charge' | 'adjustment';
}

export class MoneyModel {
  readonly budgets = new Map<string, Budget>();
  readonly tasks: Task[] = [];
  readonly postings: Posting[] = [];
  readonly closed = new Set<Month>();
  /** limits on tasks in flight and requests a minute (§20) */
  readonly limits = new LimitsModel();
  /** seedream-4.0's rates in force now: a task keeps the version it was accepted with (§3) */
  seedream: Record<string, string> = { ...SEEDREAM_RATES };
  /** the contract in force now (contract-model.ts; a task keeps its version's terms, §19) */
  contract: Contract = [];
  /** finance's credit price and FX rates (EUR, JPY), by the first month each applies to (§19) */
  readonly rates = new RatesModel();
  /** a USD commitment of one month, trued up on `project` when that month closes (§19); `trued`: what closes posted */
  commitment: { project: string; amount: Decimal; month: Month; trued: Decimal } | null = null;
  /** the vendor's statements held, and their items (§14) */
  readonly statements = new StatementsModel(this);

  /** archived months (§18), and the tasks whose rows left the database with them */
  readonly archived = new Set<Month>();
  readonly gone = new Set<Task>();

  constructor(
    readonly current: Month,
    readonly previous: Month,
    /** the month before last: over a week ago, so it may be archived (§18) */
    readonly older: Month = monthBefore(previous),
  ) {}

  /** The model's months, oldest first. */
  get months(): Month[] {
    return [this.older, this.previous, this.current];
  }

  /** Where a movement meant for `day` is dated: that day, or the first of the first open month after it (§13). */
  postDay(day: Day): Day {
    const month = this.postMonth(monthOf(day));
    return month === monthOf(day) ? day : `${month}-01`;
  }

  /** Where a movement dated in `month` is posted: that month, or the first open one after it (§13). */
  postMonth(month: Month): Month {
    const order = this.months;
    let i = order.indexOf(month);
    while (i < order.length - 1 && this.closed.has(order[i]!)) i++;
    return order[i]!;
  }

  /** Whether the ledger holds an entry dated in `month` (a hold, a charge, an adjustment). */
  hasEntries(month: Month): boolean {
    return (
      this.tasks.some((t) => monthOf(t.acceptedDay) === month) || this.postings.some((p) => monthOf(p.day) === month)
    );
  }

  /** Why `month` cannot be closed now (months close in order, §13), or null. */
  closeRefusal(month: Month): string | null {
    if (this.closed.has(month)) return 'already closed';
    const earlier = this.months.slice(0, this.months.indexOf(month));
    return earlier.some((e) => !this.closed.has(e) && this.hasEntries(e)) ? 'an earlier month is open' : null;
  }

  /** Why `month` cannot be reopened now (the latest closed first; never an archived one), or null. */
  reopenRefusal(month: Month): string | null {
    if (!this.closed.has(month)) return 'not closed';
    const later = this.months.slice(this.months.indexOf(month) + 1);
    if (later.some((l) => this.closed.has(l))) return 'a later month is closed';
    return this.archived.has(month) ? 'archived' : null;
  }

  /**
   * The first month of activity (§16): the earliest a task in the database was accepted in, or now
   * (the model's projects are made now; its tasks of past months are dated back).
   */
  firstMonth(): Month {
    return (
      this.months.find((m) => this.tasks.some((t) => monthOf(t.acceptedDay) === m && !this.gone.has(t))) ?? this.current
    );
  }

  /**
   * A closed month archived (§18): its tasks leave the database, but for those still open, posted to
   * after the month, or awaiting a person (under review, or named by an open vendor difference). A
   * hold carried by the close is a hold entry in the next month: its task stays for good.
   */
  archive(month: Month): void {
    this.archived.add(month);
    for (const t of this.tasks) {
      if (monthOf(t.acceptedDay) !== month) continue;
      const postedLater =
        monthOf(t.holdDay) !== month || this.postings.some((p) => p.task === t && monthOf(p.day) !== month);
      const named = this.statements.items.some((i) => i.task === t && i.state === 'open');
      if (inFlight(t) || postedLater || this.underReview(t) || named) continue;
      this.gone.add(t);
    }
  }

  restore(month: Month): void {
    this.archived.delete(month);
    for (const t of this.gone) if (monthOf(t.acceptedDay) === month) this.gone.delete(t);
  }

  /** Whether a movement counts in a budget; `user`: an EACH_USER budget's user whose own balance is asked. */
  private matches(b: Budget, project: string, unit: Unit, task: Task | null, user: string | null = null): boolean {
    if (b.project !== project || b.unit !== unit) return false;
    // An adjustment with no task has no model: a budget on part of the catalog never counts it (§20).
    if (b.part && (!task || !inPart(b.part, task.model))) return false;
    if (b.scope === 'PROJECT') return true;
    if (!task) return false; // an adjustment with no task counts in its project's budgets only
    if (b.scope === 'USER') return task.user === b.value;
    if (b.scope === 'EACH_USER') return task.user !== null && task.user === user;
    if (b.scope === 'API_KEY') return task.viaKey === true;
    return task.tags.includes(b.value!);
  }

  /** Whether what is dated `day` counts in `b`'s period that holds `at`. */
  private inPeriod(b: Budget, day: Day, at: Day): boolean {
    if (b.period === 'LIFETIME') return true;
    if (b.period === 'MONTHLY') return monthOf(day) === monthOf(at);
    return b.period === 'WEEKLY' ? weekOf(day) === weekOf(at) : day === at;
  }

  /**
   * A budget's spent and held in its period that holds `at`, today's by default (EACH_USER: `user`'s
   * own), from the postings and the open holds.
   */
  balance(b: Budget, user: string | null = null, at: Day = today()): { spent: Decimal; held: Decimal } {
    let spent = new Decimal(0);
    for (const p of this.postings)
      if (this.matches(b, p.project, p.unit, p.task, user) && this.inPeriod(b, p.day, at)) spent = spent.plus(p.amount);
    let held = new Decimal(0);
    for (const t of this.tasks) {
      if (inFlight(t) && this.matches(b, t.project, t.unit, t, user) && this.inPeriod(b, t.holdDay, at))
        held = held.plus(t.hold);
    }
    return { spent, held };
  }

  /**
   * Whether a submission is admitted: no hard budget it matches would pass its limit (§4) in its
   * period that holds `at.day` (a task dated back is held in that day's; today by default).
   */
  admits(
    project: string,
    candidate: Pick<Task, 'model' | 'unit' | 'user' | 'tags' | 'hold'>,
    at: HoldAt = {},
  ): boolean {
    const probe = { ...candidate, project, viaKey: at.viaKey ?? true } as Task;
    for (const b of this.budgets.values()) {
      if (!b.hard || !this.matches(b, project, candidate.unit, probe, candidate.user)) continue;
      const { spent, held } = this.balance(b, candidate.user, at.day);
      if (spent.plus(held).plus(candidate.hold).gt(b.limit)) return false;
    }
    return true;
  }

  accept(
    task: Omit<Task, 'state' | 'resolved' | 'holdDay' | 'acceptedDay' | 'vendor' | 'review'> & {
      day?: Day;
      minute?: number;
    },
  ): Task {
    const { day = today(), minute = minuteOf(Date.now()), ...rest } = task;
    const made: Task = {
      ...rest,
      state: 'held',
      resolved: false,
      acceptedDay: day,
      holdDay: this.postDay(day),
      vendor: 'processing',
      review: false,
    };
    this.tasks.push(made);
    this.limits.admitted(made, minute);
    return made;
  }

  /** How a submission is answered (n alike at once: whether all n fit): budgets first (402), then limits (429). */
  answer(
    project: string,
    candidate: Pick<Task, 'model' | 'unit' | 'user' | 'tags' | 'hold' | 'tokens'>,
    n = 1,
    at: HoldAt = {},
  ): 200 | 402 | 429 {
    if (!this.admits(project, { ...candidate, hold: candidate.hold.times(n) }, at)) return 402;
    const minute = at.minute ?? minuteOf(Date.now());
    return this.limits.fits(project, candidate.user, n, this.tasks, minute, candidate.tokens) ? 200 : 429;
  }

  /**
   * The vendor's terminal answer, seen by a poll: ready charges the exact price (media: the price
   * fixed at acceptance; chat: its usage priced, or its estimate when no usage came, for review),
   * failed releases (§3). A charge above the hold is an overrun, under review (§6).
   */
  settle(task: Task): void {
    if (task.state !== 'held' || (task.vendor !== 'ready' && task.vendor !== 'failed')) return;
    const day = this.postDay(task.holdDay);
    task.state = task.vendor === 'ready' ? 'settled' : 'failed';
    this.limits.ended(task, task.vendor === 'ready' ? (task.chatTokens ?? null) : 0);
    if (task.vendor !== 'ready') return;
    const charge = task.chatCharge ?? task.hold;
    task.review = task.chatCharge === null || charge.gt(task.hold);
    this.postings.push({ project: task.project, unit: task.unit, amount: charge, day, task, kind: 'charge' });
  }

  /**
   * A poll the vendor answers "not found": the third of a held task's makes it unknown, its hold kept
   * for review (§10; the model's gateways wait no time between them, TASK_NOT_FOUND_AFTER_MS=0).
   */
  notFound(task: Task): void {
    if (task.state !== 'held' || task.vendor !== 'forgotten') return;
    task.missingPolls = (task.missingPolls ?? 0) + 1;
    task.pollLater = true; // counted with the next poll a poll interval away, whoever polled (§10)
    if (task.missingPolls >= MISSING_POLLS) task.state = 'unknown';
  }

  /**
   * What a gateway's sweep of abandoned submissions does, at its start and at each poll round: a task
   * left between its hold and the vendor's answer for longer than any call (the model's are last
   * month's, held through the ledger's own service) is unknown, its hold kept (§4, §10).
   */
  sweepAbandoned(): void {
    for (const t of this.tasks) if (t.ref.startsWith('gw-') && t.state === 'held') t.state = 'unknown';
  }

  /** Under review: an unknown outcome, or a settled overrun or estimate, not yet resolved (§10). */
  underReview(task: Task): boolean {
    return !task.resolved && (task.state === 'unknown' || (task.state === 'settled' && task.review));
  }

  /**
   * An operator's decision (§10). Unknown: CHARGE an amount (the hold by default) or RELEASE.
   * Settled: the task's net becomes the stated amount (RELEASE: nothing; CHARGE with no amount:
   * what it stands at, so nothing moves), by an adjustment in its own month.
   */
  resolve(task: Task, outcome: 'CHARGE' | 'RELEASE', amount: Decimal | null): Decimal {
    task.resolved = true;
    if (task.state === 'settled') {
      const net = this.net(task)!;
      const target = outcome === 'RELEASE' ? new Decimal(0) : (amount ?? net);
      if (!target.eq(net)) this.adjust(task.project, task.unit, target.minus(net), task.acceptedDay, task);
      return target;
    }
    const charge = outcome === 'RELEASE' ? new Decimal(0) : (amount ?? task.hold);
    this.limits.ended(task, charge.isZero() ? 0 : null); // released: nothing ran; charged: its estimate stands
    if (!charge.isZero())
      this.postings.push({
        project: task.project,
        unit: task.unit,
        amount: charge,
        day: this.postDay(task.holdDay),
        task,
        kind: 'charge',
      });
    return charge;
  }

  /** A correction meant for `day` (one of a task: for the task's acceptance), posted where the books are open (§13). */
  adjust(project: string, unit: Unit, amount: Decimal, day: Day, task: Task | null): void {
    this.postings.push({
      project,
      unit,
      amount,
      day: this.postDay(task ? task.acceptedDay : day),
      task,
      kind: 'adjustment',
    });
  }

  /** charge + adjustments of a task; null until charged (resolved to 0 counts as charged 0). */
  net(task: Task): Decimal | null {
    const own = this.postings.filter((p) => p.task === task);
    const charged = own.some((p) => p.kind === 'charge') || task.state === 'failed' || task.resolved;
    if (!charged && task.state !== 'settled') return null;
    return own.reduce((s, p) => s.plus(p.amount), new Decimal(0));
  }

  /** What spendReport counts for a project and month, per unit (charges and adjustments posted in it). */
  reported(project: string, month: Month): Map<Unit, Decimal> {
    const out = new Map<Unit, Decimal>();
    for (const p of this.postings)
      if (p.project === project && monthOf(p.day) === month)
        out.set(p.unit, (out.get(p.unit) ?? new Decimal(0)).plus(p.amount));
    return out;
  }

  close(month: Month): void {
    const c = this.commitment;
    if (c && c.month === month) {
      // Every project's USD posted in the month less its true-ups, against the commitment: the
      // shortfall is its last entry. Closed again after a reopening, what the shortfall became since.
      const used = this.postings
        .filter((p) => monthOf(p.day) === month && p.unit === 'USD')
        .reduce((t, p) => t.plus(p.amount), new Decimal(0))
        .minus(c.trued);
      const shortfall = Decimal.max(0, c.amount.minus(used));
      if (!shortfall.equals(c.trued)) {
        this.adjust(c.project, 'USD', shortfall.minus(c.trued), lastDayOf(month), null);
        c.trued = shortfall;
      }
    }
    this.closed.add(month);
    // Holds still open are carried to the first instant of the first open month (§13).
    for (const t of this.tasks) if (monthOf(t.holdDay) === month && inFlight(t)) t.holdDay = this.postDay(t.holdDay);
  }

  /** A project's month converted (§19): each unit at the rates in force for the month, null while one is missing. */
  converted(project: string, month: Month, currency: Currency): Converted {
    return this.rates.convert(this.reported(project, month), month, currency);
  }

  reopen(month: Month): void {
    this.closed.delete(month);
  }

  byRef(ref: string): Task | undefined {
    return this.tasks.find((t) => t.ref === ref);
  }
}
