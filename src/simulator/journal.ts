/**
 * The simulator's journal: accepted tasks, forced outcomes and fates, one JSON line each, so the
 * sandbox's vendor still knows its tasks after a restart. Tasks older than a week are dropped
 * when it is read. Never the prompt: only the fields the answers read.
 */
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
  type WriteStream,
} from 'node:fs';
import path from 'node:path';
import type { SimTask } from './sim-task.js';

const JOURNAL_KEEP_MS = 7 * 24 * 3600_000;

/** What a task needs to be answered after a restart: never the prompt itself. */
export function durable(
  task: SimTask,
): Omit<SimTask, 'request' | 'forced' | 'fate'> & { request: Record<string, unknown> } {
  const { request, forced: _forced, fate: _fate, ...rest } = task;
  const kept = Object.fromEntries(
    ['n', 'max_tokens'].filter((k) => typeof request[k] === 'number').map((k) => [k, request[k]]),
  );
  return { ...rest, request: kept };
}

export function loadJournal(file: string): Map<number, SimTask> {
  const tasks = new Map<number, SimTask>();
  if (!existsSync(file)) return tasks;
  const since = Date.now() - JOURNAL_KEEP_MS;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    let entry: {
      task?: SimTask;
      forced?: { taskId: number } & NonNullable<SimTask['forced']>;
      fate?: { taskId: number; fate: SimTask['fate'] };
    };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line cut by a crash
    }
    if (entry.task && entry.task.acceptedAt >= since) tasks.set(entry.task.taskId, entry.task);
    if (entry.fate) {
      const task = tasks.get(entry.fate.taskId);
      if (task) task.fate = entry.fate.fate;
    }
    if (entry.forced) {
      const { taskId, ...outcome } = entry.forced;
      const task = tasks.get(taskId);
      if (task) task.forced = outcome;
    }
  }
  return tasks;
}

/** Rewrites the journal with what was kept (old tasks dropped), then appends to it. */
export function openJournal(file: string, tasks: Map<number, SimTask>): WriteStream {
  mkdirSync(path.dirname(file), { recursive: true });
  const lines = [...tasks.values()].flatMap((t) => [
    JSON.stringify({ task: durable(t) }),
    ...(t.forced ? [JSON.stringify({ forced: { taskId: t.taskId, ...t.forced } })] : []),
    ...(t.fate ? [JSON.stringify({ fate: { taskId: t.taskId, fate: t.fate } })] : []),
  ]);
  writeFileSync(`${file}.tmp`, lines.length ? `${lines.join('\n')}\n` : '');
  renameSync(`${file}.tmp`, file);
  return createWriteStream(file, { flags: 'a' });
}
