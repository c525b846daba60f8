/**
 * When the figures on a page were computed: the gateway keeps report answers while the books they
 * cover are unchanged (decisions §22) and says when each was computed (`extensions.books`); a page
 * shows the oldest, so a person knows how fresh what they read is.
 */
export interface BooksExtension {
  computedAt: string;
}

export function ComputedAt({ books }: { books: BooksExtension | undefined }) {
  if (!books) return null;
  const at = new Date(books.computedAt);
  const time = at.toISOString().slice(11, 19);
  const day = at.toISOString().slice(0, 10);
  return (
    <p class="computed-at" data-testid="computed-at" data-computed-at={books.computedAt}>
      Figures computed {day} {time} UTC
    </p>
  );
}
