/**
 * `spendgate user invite` (the first owner is invited this way, with the database's credentials or
 * the ADMIN_TOKEN's break-glass) and `spendgate token create` (a person's or a service account's
 * token, printed once). Audited as the CLI.
 */
import { parseArgs } from 'node:util';
import { calendarDate, notADate } from '../../common/dates.js';
import { AuditService } from '../../audit/audit.service.js';
import { ChangesService } from '../../audit/changes.service.js';
import { ROLES, type Role } from '../../auth/permissions.js';
import { PeopleService } from '../../people/people.service.js';
import { TokensService, type Holder } from '../../people/tokens.service.js';
import { ProjectsService } from '../../projects/projects.service.js';
import { cliActor, UsageError, withDatabase } from '../cli-support.js';

export async function userInvite(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, role: { type: 'string' }, projects: { type: 'string' } },
  });
  const role = values.role?.toUpperCase() as Role | undefined;
  if (!values.email || !role || !ROLES.includes(role))
    throw new UsageError(
      `user invite --email E --role ${ROLES.map((r) => r.toLowerCase()).join('|')} [--projects a,b]`,
    );
  const person = await withDatabase(async (db) => {
    const projects = new ProjectsService(db);
    const projectIds = values.projects
      ? await Promise.all(values.projects.split(',').map(async (p) => (await projects.resolve(p.trim())).id))
      : null;
    const { actor, client } = cliActor();
    return new ChangesService(db, new AuditService(db)).run(
      actor,
      client,
      (p: { id: string }) => ({ action: 'person.invite', targetKind: 'person', targetId: p.id, after: p }),
      () => new PeopleService(db).invite(values.email!, { role, projectIds }, (actor as { label: string }).label),
    );
  });
  process.stdout.write(`${person.id}\n`);
  process.stderr.write(
    `invited ${person.email} as ${person.role.toLowerCase()}${person.allProjects ? ' of every project' : ` of ${person.projectIds.length} project(s)`}: they sign in with your identity provider, or with a token from \`spendgate token create --email ${person.email}\`\n`,
  );
  return 0;
}

export async function tokenCreate(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      service: { type: 'string' },
      expires: { type: 'string' },
    },
  });
  if (!values.name || (values.email === undefined) === (values.service === undefined)) {
    throw new UsageError('token create --name N (--email PERSON | --service SERVICE_ACCOUNT) [--expires DATE]');
  }
  const expiresAt = values.expires ? calendarDate(values.expires) : undefined;
  if (expiresAt === null) throw new UsageError(notADate('--expires', values.expires!));
  const secret = await withDatabase(async (db) => {
    const holder = await holderOf(db, values.email, values.service);
    const { actor, client } = cliActor();
    const made = await new ChangesService(db, new AuditService(db)).run(
      actor,
      client,
      (t: { token: { id: string; prefix: string; name: string; holder: string } }) => ({
        action: 'token.create',
        targetKind: 'token',
        targetId: t.token.id,
        after: { prefix: t.token.prefix, name: t.token.name, holder: t.token.holder },
      }),
      () => new TokensService(db).create(holder, values.name!, expiresAt),
    );
    return made.secret;
  });
  process.stdout.write(`${secret}\n`);
  return 0;
}

async function holderOf(
  db: import('../../database/database.js').Database,
  email?: string,
  service?: string,
): Promise<Holder> {
  const people = new PeopleService(db);
  if (email !== undefined) {
    const personId = await people.activePersonId(email);
    if (!personId)
      throw new UsageError(`no person ${email} (invite them first: spendgate user invite --email ${email} --role …)`);
    return { personId };
  }
  const serviceAccountId = await people.activeServiceAccountId(service ?? '');
  if (!serviceAccountId) throw new UsageError(`no service account named ${service}`);
  return { serviceAccountId };
}
