/**
 * The Reconciliation page's upload: a vendor statement picked as a file, streamed to
 * POST /reports/vendor-statements with the session's CSRF token (and a column mapping for other
 * layouts); says what the import did, or the gateway's refusal as it is.
 */
import { useState } from 'preact/hooks';
import { groupDigits } from '../format';
import { session } from '../session';

export function StatementUpload({ done }: { done: (id: string) => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [mapping, setMapping] = useState('');
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);
  const send = async () => {
    if (!file) return;
    setBusy(true);
    setMessage(null);
    try {
      const query = mapping.trim() ? `?mapping=${encodeURIComponent(mapping.trim())}` : '';
      const response = await fetch(`/reports/vendor-statements${query}`, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'text/csv', 'x-csrf-token': session.csrf() },
        body: file,
      });
      const answer = (await response.json().catch(() => ({}))) as {
        id?: string;
        rows?: number;
        repeated?: number;
        created?: boolean;
        message?: string;
      };
      if (!response.ok) throw new Error(answer.message ?? `the gateway answered ${response.status}`);
      setMessage({
        error: false,
        text: answer.created
          ? importedText(answer.rows ?? 0, answer.repeated ?? 0)
          : 'This file was imported before: nothing changed.',
      });
      done(answer.id!);
    } catch (e) {
      setMessage({ error: true, text: (e as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="upload"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label>
        Statement (CSV){' '}
        <input
          type="file"
          accept=".csv,text/csv"
          data-testid="statement-file"
          onChange={(e) => setFile((e.currentTarget as HTMLInputElement).files?.[0] ?? null)}
        />
      </label>
      <details>
        <summary>Another layout: column mapping</summary>
        <textarea
          rows={3}
          cols={70}
          value={mapping}
          onInput={(e) => setMapping((e.currentTarget as HTMLTextAreaElement).value)}
          placeholder='[{"field":"amount","column":"Cost (cents)","scale":"0.01"}]'
        />
      </details>
      <button type="submit" disabled={!file || busy}>
        {busy ? 'Importing…' : 'Import'}
      </button>
      {message && (
        <p class={message.error ? 'error' : 'ok'} role={message.error ? 'alert' : 'status'}>
          {message.text}
        </p>
      )}
    </form>
  );
}

/** "Imported 1 new row; 5 an earlier statement holds were skipped." */
export function importedText(rows: number, repeated: number): string {
  const fresh = rows - repeated;
  const skipped = repeated
    ? `; ${groupDigits(String(repeated))} ${repeated === 1 ? 'row' : 'rows'} an earlier statement holds ${repeated === 1 ? 'was' : 'were'} skipped`
    : '';
  return `Imported ${groupDigits(String(fresh))} new ${fresh === 1 ? 'row' : 'rows'}${skipped}.`;
}
