/** A process's or thread's nice value (Linux: /proc/<id>/stat, field 19); null when it cannot be read (ended). */
import { readFileSync } from 'node:fs';

export function niceOf(id: number): number | null {
  try {
    const stat = readFileSync(`/proc/${id}/stat`, 'utf8');
    // After the command name (which may hold spaces) come fields 3 onwards; nice is field 19.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19 - 3]);
  } catch {
    return null;
  }
}
