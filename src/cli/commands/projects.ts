/** `spendgate project create` and `spendgate key create`: audited as the CLI (cli-support.ts). */
import { parseArgs } from 'node:util';
import { calendarDate, notADate } from '../../common/dates.js';
import { AuditService } from '../../audit/audit.service.js';
import { ChangesService } from '../../audit/changes.service.js';
import { ProjectsService } from '../../projects/projects.service.js';
import { cliActor, UsageError, withDatabase } from '../cli-support.js';

export async function projectCreate(args: string[]): Promise<number> {
  const name = args.join(' ').trim();
  if (!name) throw new UsageError('project create <name>');
  const project = await withDatabase((db) => {
    const { actor, client } = cliActor();
    return new ChangesService(db, new AuditService(db)).run(
      actor,
      client,
      (p: { id: string }) => ({
        action: 'project.create',
        targetKind: 'project',
        targetId: p.id,
        projectId: p.id,
        after: p,
      }),
      () => new ProjectsService(db).create(name),
    );
  });
  process.stdout.write(`${project.id}\n`);
  return 0;
}

export async function keyCreate(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      project: { type: 'string' },
      tags: { type: 'string' },
      name: { type: 'string' },
      expires: { type: 'string' },
    },
  });
  if (!values.project)
    throw new UsageError('key create --project <name-or-id> [--tags name=value,...] [--name N] [--expires DATE]');
  const expiresAt = values.expires ? calendarDate(values.expires) : undefined;
  if (expiresAt === null) throw new UsageError(notADate('--expires', values.expires!));
  const key = await withDatabase(async (db) => {
    const projects = new ProjectsService(db);
    const project = await projects.resolve(values.project!);
    const { actor, client } = cliActor();
    // The key's default tags (decisions §7): every task it submits carries them.
    return new ChangesService(db, new AuditService(db)).run(
      actor,
      client,
      (k: string) => ({
        action: 'api-key.issue',
        targetKind: 'api-key',
        targetId: k.slice(3, 15),
        projectId: project.id,
        after: { name: values.name ?? null, tags: values.tags ?? null, expiresAt: expiresAt ?? null },
      }),
      () =>
        projects.issueKey(project.id, values.tags ? values.tags.split(',') : [], {
          ...(values.name ? { name: values.name } : {}),
          ...(expiresAt ? { expiresAt } : {}),
          createdBy: (actor as { label: string }).label,
        }),
    );
  });
  process.stdout.write(`${key}\n`);
  return 0;
}
