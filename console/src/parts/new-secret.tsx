/** A secret just created (a token, a key), shown this once: the API never returns it again. */
export function NewSecret({ secret, what, onDone }: { secret: string; what: string; onDone(): void }) {
  return (
    <div class="card secret" role="status" data-testid="new-secret">
      <p>Your new {what}. Copy it now: it is not stored and will not be shown again.</p>
      <input
        readOnly
        value={secret}
        onFocus={(e) => (e.target as HTMLInputElement).select()}
        aria-label={`the new ${what}`}
      />
      <button type="button" class="link" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}
