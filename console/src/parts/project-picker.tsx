/**
 * A person picks the project that budgets and filters apply to (among those they may read); a project key has its own.
 */
import { useQuery } from '@urql/preact';
import { useSigned } from '../signed';

export const PROJECTS = `query Projects { projects { id name apiKeys { prefix name } } }`;

interface ProjectNames {
  id: string;
  name: string;
  apiKeys: { prefix: string; name: string | null }[];
}

/**
 * The projects the caller may read, with their keys' names: one request, kept for every page. Cache-first: a part
 * that mounts later (the early warning, once the figures are in) asked the network again under cache-and-network;
 * a mutation that returns a project or a key still refreshes it (urql's cache clears queries by type).
 */
export function useProjects(): ProjectNames[] {
  const [{ data }] = useQuery<{ projects: ProjectNames[] }>({ query: PROJECTS, requestPolicy: 'cache-first' });
  return data?.projects ?? [];
}

/** A key as people read it: its name beside its prefix ("search backend · 1a2b3c4d5e6f"). */
export function keyLabel(projects: ProjectNames[], prefix: string | null): string {
  if (!prefix) return '—';
  const name = projects.flatMap((p) => p.apiKeys).find((k) => k.prefix === prefix)?.name;
  return name ? `${name} · ${prefix}` : prefix;
}

export function ProjectPicker() {
  const { viewer, projectId, pickProject } = useSigned();
  const projects = useProjects();
  if (viewer.kind === 'PROJECT_KEY') return null;
  return (
    <label class="picker">
      Project{' '}
      <select
        name="project"
        value={projectId ?? ''}
        onChange={(e) => pickProject((e.target as HTMLSelectElement).value || null)}
      >
        <option value="">all projects</option>
        {projects.map((p) => (
          <option value={p.id}>{p.name}</option>
        ))}
      </select>
    </label>
  );
}

export function projectName(projects: { id: string; name: string }[], id: string): string {
  return projects.find((p) => p.id === id)?.name ?? id.slice(0, 8);
}
