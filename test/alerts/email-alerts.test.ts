/**
 * Alerts by email (decisions §8, §15) through a real SMTP server (the smtp-server package on loopback):
 * a threshold event arrives once as a readable message; with the server down for 30 s the next one
 * is delivered after it is back, the attempts in the delivery log; the weekly digest's figures are
 * the spend report's.
 */
import { SMTPServer } from 'smtp-server';
import type { Gateway } from '../../src/bootstrap.js';
import { freePort } from '../../src/database/embedded.js';
import { weeklyDigest, weekStart } from '../../src/early-warning/digest.js';
import { heldTask, settleAsImage } from '../support/builders.js';
import {
  ADMIN,
  eventually,
  freshDatabase,
  gateway,
  graphql,
  projectWithKey,
  sql,
  submitGeneration,
} from '../support/harness.js';

interface Mail {
  to: string;
  raw: string;
}

let port: number;
let server: SMTPServer | undefined;
const inbox: Mail[] = [];

function startSmtp(): Promise<void> {
  server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString()));
      stream.on('end', () => {
        inbox.push({ to: session.envelope.rcptTo.map((r) => r.address).join(','), raw });
        callback();
      });
    },
  });
  return new Promise((resolve) => server!.listen(port, '127.0.0.1', () => resolve()));
}
const stopSmtp = () => new Promise<void>((resolve) => server!.close(() => resolve()));

/** The decoded text body of a message (quoted-printable, as nodemailer writes it). */
const textOf = (raw: string) =>
  raw
    .split(/\r?\n\r?\n/)
    .slice(1)
    .join('\n\n')
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
const subjectOf = (raw: string) => /^Subject: (.*)$/m.exec(raw)?.[1] ?? '';

let gw: Gateway;

beforeAll(async () => {
  port = await freePort();
  await startSmtp();
  gw = await gateway(await freshDatabase(), {
    SMTP_URL: `smtp://127.0.0.1:${port}`,
    ALERT_EMAIL_FROM: 'alerts@spendgate.example',
    WEBHOOK_POLL_MS: '50',
    WEBHOOK_RETRY_BASE_MS: '1000',
    WEBHOOK_TIMEOUT_MS: '2000',
    SIMULATOR_DELAY_MS: '600000',
    EARLY_WARNING_MS: '0',
  });
});
afterAll(async () => {
  await gw.close();
  if (server) await stopSmtp().catch(() => {});
});

test('a threshold crossing arrives once as a readable email; with the SMTP server down 30 s the next one arrives after, its attempts logged', async () => {
  const { projectId, key } = await projectWithKey(gw, 'Search & Ranking');
  const created = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!) {
        createWebhookEndpoint(
          url: "mailto:Finance@Example.com"
          format: EMAIL
          projectId: $p
          events: ["budget.threshold_crossed"]
        ) {
          endpoint {
            id
            url
            format
          }
        }
      }
    `,
    { p: projectId },
  );
  expect((created.body.data.createWebhookEndpoint as { endpoint: unknown }).endpoint).toMatchObject({
    url: 'mailto:finance@example.com',
    format: 'EMAIL',
  });
  expect(
    (
      await graphql(
        gw,
        ADMIN,
        'mutation { createWebhookEndpoint(url: "mailto:a@b.com, c@d.com", format: EMAIL) { secret } }',
      )
    ).body.errors?.[0]?.message,
  ).toMatch(/one address/);
  await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!) {
        setBudget(projectId: $p, unit: USD, limit: "0.15", period: MONTHLY, hard: false, thresholds: [50, 80])
      }
    `,
    { p: projectId },
  );
  for (let i = 0; i < 2; i++)
    expect((await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'a fox' })).status).toBe(200); // 0.08 of 0.15: 50 % crossed
  await eventually(async () => inbox.length >= 1, 15_000);
  await new Promise((r) => setTimeout(r, 500));
  expect(inbox).toHaveLength(1);
  expect(inbox[0]!.to).toBe('finance@example.com');
  expect(subjectOf(inbox[0]!.raw)).toBe('Budget at 50%: monthly USD budget of project Search & Ranking');
  expect(textOf(inbox[0]!.raw)).toContain(
    'The monthly USD budget of project Search & Ranking crossed 50% of its limit.',
  );
  expect(textOf(inbox[0]!.raw)).toContain('Spent 0 USD, held 0.08, 0.07 of 0.15 left.');

  // Down for 30 s: the 80 % crossing waits, then arrives once.
  await stopSmtp();
  const down = Date.now();
  expect((await submitGeneration(gw, key, { model: 'seedream-4.0', prompt: 'another fox' })).status).toBe(200);
  await eventually(
    async () =>
      Number((await sql(gw, `SELECT count(*)::int AS n FROM webhook_attempt WHERE error = 'no SMTP answer'`))[0]!.n) >=
      2,
    20_000,
  );
  await new Promise((r) => setTimeout(r, Math.max(0, 30_000 - (Date.now() - down))));
  await startSmtp();
  await eventually(async () => inbox.length >= 2, 60_000, 200);
  expect(subjectOf(inbox[1]!.raw)).toBe('Budget at 80%: monthly USD budget of project Search & Ranking');
  const log = await sql(
    gw,
    `SELECT a.status_code, a.error FROM webhook_attempt a JOIN webhook_delivery d ON d.id = a.delivery_id JOIN outbox_event e ON e.id = d.event_id
                             WHERE e.payload LIKE '%"threshold": 80%' OR e.payload LIKE '%"threshold":80%' ORDER BY a.attempt`,
  );
  expect(log.length).toBeGreaterThanOrEqual(3);
  expect(log.slice(0, -1).every((a) => a.error === 'no SMTP answer' && a.status_code === null)).toBe(true);
  expect(log.at(-1)).toEqual({ status_code: 250, error: null });
  await new Promise((r) => setTimeout(r, 500));
  expect(inbox).toHaveLength(2);
}, 120_000);

test("the weekly digest goes to the addresses that asked for it, with the spend report's figures", async () => {
  const monday = weekStart(new Date());
  const lastWeek = new Date(monday.getTime() - 7 * 86_400_000);
  const teams = [await projectWithKey(gw, 'digest-a'), await projectWithKey(gw, 'digest-b')];
  for (const [i, team] of teams.entries()) {
    for (let d = 0; d < 3 + i; d++) {
      const t = await heldTask(gw, {
        projectId: team.projectId,
        acceptedAt: new Date(lastWeek.getTime() + d * 86_400_000 + 3_600_000),
      });
      await settleAsImage(gw, t.taskId);
    }
  }
  await graphql(
    gw,
    ADMIN,
    'mutation { createWebhookEndpoint(url: "mailto:cfo@example.com", format: EMAIL, events: ["spend.digest"]) { secret } }',
  );
  const before = inbox.length;
  expect(await weeklyDigest(gw.db)).toBe(true);
  expect(await weeklyDigest(gw.db)).toBe(false); // once a week
  await eventually(async () => inbox.length > before, 15_000);
  const mail = inbox.at(-1)!;
  expect(mail.to).toBe('cfo@example.com');
  expect(subjectOf(mail.raw)).toBe(
    `Weekly spend, ${lastWeek.toISOString().slice(0, 10)} to ${monday.toISOString().slice(0, 10)}`,
  );
  const report = (
    await graphql(
      gw,
      ADMIN,
      `
        query ($f: DateTime!, $t: DateTime!) {
          spendReport(from: $f, to: $t, groupBy: ["project"]) {
            keys
            totals {
              unit
              amount
            }
            tasks
          }
        }
      `,
      { f: lastWeek.toISOString(), t: monday.toISOString() },
    )
  ).body.data.spendReport as Array<{ keys: string[]; totals: Array<{ unit: string; amount: string }>; tasks: number }>;
  const text = textOf(mail.raw);
  for (const name of ['digest-a', 'digest-b']) {
    const row = report.find((r) => r.keys[0] === name)!;
    expect(text).toContain(`  ${name}: ${row.totals[0]!.amount} USD (${row.tasks} tasks)`);
  }
  // The project-scoped endpoint of the first test did not get it.
  expect(inbox.filter((m) => m.to === 'finance@example.com' && subjectOf(m.raw).startsWith('Weekly'))).toHaveLength(0);
}, 60_000);
