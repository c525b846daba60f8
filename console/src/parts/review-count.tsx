/** The review queue's size, beside its link in the shell's navigation. */
import { useQuery } from '@urql/preact';
import { useSigned } from '../signed';

const REVIEW_COUNT = `query ReviewCount($projects: [ID!]) { taskTotals(filter: { needsReview: true, projectIds: $projects }) { tasks } }`;

/** What the count asks for the project looked at (first-queries.ts sends the same before the shell renders). */
export const reviewCountRequest = (projectId: string | null) => ({
  query: REVIEW_COUNT,
  variables: { projects: projectId ? [projectId] : null },
});

/** The queue's size (refreshed with the page); nothing when it is empty. */
export function ReviewCount() {
  const { projectId } = useSigned();
  const [{ data }] = useQuery<{ taskTotals: { tasks: number } }>(reviewCountRequest(projectId));
  const n = data?.taskTotals.tasks;
  if (!n) return null;
  return (
    <span class="count" data-testid="review-count" aria-label={`${n} to review`}>
      {n}
    </span>
  );
}
