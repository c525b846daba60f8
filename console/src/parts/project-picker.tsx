/** A person picks the project that budgets and filters apply to (among those they may read); a project key has its own. */
import { useQuery } from '@urql/preact';
import { useSigned } from '../app';

export const PROJECTS = `query Projects { projects { id name } }`;

export function useProjects(): { id: string; name: string }[] {
  const [{ data }] = useQuery<{ projects: { id: string; name: string }[] }>({ query: PROJECTS });
  return data?.projects ?? [];
}

export function ProjectPicker() {
  const { viewer, projectId, pickProject } = useSigned();
  const projects = useProjects();
  if (viewer.kind === 'PROJECT_KEY') return null;
  return (
    <label class="picker">
      Project{' '}
      <select name="project" value={projectId ?? ''} onChange={(e) => pickProject((e.target as HTMLSelectElement).value || null)}>
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
