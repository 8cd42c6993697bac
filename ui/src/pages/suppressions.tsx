// The workspace's suppression list (shared by both environments): paged newest first, searched by
// part of an address, added to and removed from by hand, imported from a file (with the upload's
// progress and each refused line) and exported whole as CSV.
import { useState } from 'preact/hooks';
import { del, get, post, query, upload } from '../api';
import { Badge, ConfirmButton, ErrorLine, Field, Loading, Page, Pager, Table, Time, useAction, useAsync } from '../components';
import type { ResponseOf } from '../../../src/contract/responses';
import type { SuppressionReason } from '../../../src/contract/vocabulary';
import type { Route } from '../routes';
import { useSelectionKey } from '../session';

// The reasons an imported address list may carry (`unregistered` is a push token's, never a list's).
const IMPORT_REASONS: SuppressionReason[] = ['manual', 'bounce', 'complaint', 'unsubscribe'];

const REASON_TONES: Partial<Record<SuppressionReason, 'bad' | 'warn' | 'muted'>> = {
  bounce: 'bad',
  complaint: 'bad',
  unsubscribe: 'warn',
  manual: 'muted',
};

function AddSuppression(props: { onAdded(): void }) {
  const [address, setAddress] = useState('');
  const [detail, setDetail] = useState('');
  const action = useAction(async () => {
    await post('/v1/suppressions', { address, reason: 'manual', ...(detail ? { detail } : {}) });
    setAddress('');
    setDetail('');
    props.onAdded();
  });
  return (
    <form
      class="card"
      aria-labelledby="add-suppression"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2 id="add-suppression">Suppress an address</h2>
      <div class="row">
        <Field label="Address">
          {(id) => <input id={id} type="email" required value={address} onInput={(e) => setAddress(e.currentTarget.value)} />}
        </Field>
        <Field label="Note (optional)">
          {(id) => <input id={id} maxLength={500} value={detail} onInput={(e) => setDetail(e.currentTarget.value)} />}
        </Field>
      </div>
      <ErrorLine error={action.error} />
      <button type="submit" disabled={action.busy}>
        Suppress
      </button>
    </form>
  );
}

type ImportResult = ResponseOf<'POST /v1/suppressions/import'>;

// What the import reads, by the file's name (browsers give CSV files a type, rarely NDJSON ones).
const TYPES: [RegExp, string][] = [
  [/\.(ndjson|jsonl)$/i, 'application/x-ndjson'],
  [/\.json$/i, 'application/json'],
];
const typeOf = (file: File) => TYPES.find(([name]) => name.test(file.name))?.[1] ?? 'text/csv';
const SHOWN_ERRORS = 20;

function ImportSuppressions(props: { onImported(): void }) {
  const [file, setFile] = useState<File | null>(null);
  const [reason, setReason] = useState('manual');
  const [sent, setSent] = useState<{ bytes: number; total: number } | null>(null);
  const [result, setResult] = useState<ImportResult | null>(null);
  const action = useAction(async () => {
    if (!file) return;
    setResult(null);
    setSent({ bytes: 0, total: file.size });
    const answer = await upload(`/v1/suppressions/import${query({ reason })}`, file, typeOf(file), (bytes, total) =>
      setSent({ bytes, total }),
    );
    setResult(answer);
    props.onImported();
  });
  const percent = sent && sent.total > 0 ? Math.round((100 * sent.bytes) / sent.total) : 0;
  return (
    <form
      class="card"
      aria-labelledby="import-suppressions"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2 id="import-suppressions">Import a list</h2>
      <p class="muted">
        CSV with a header row (SendGrid's and Postmark's exports as they are), NDJSON or a JSON array. Importing the same file twice changes
        nothing; an entry is never weakened.
      </p>
      <div class="row">
        <Field label="File">
          {(id) => (
            <input
              id={id}
              type="file"
              required
              accept=".csv,.ndjson,.jsonl,.json,text/csv,application/json"
              onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
            />
          )}
        </Field>
        <Field label="Reason for lines without one">
          {(id) => (
            <select id={id} value={reason} onChange={(e) => setReason(e.currentTarget.value)}>
              {IMPORT_REASONS.map((r) => (
                <option value={r}>{r}</option>
              ))}
            </select>
          )}
        </Field>
      </div>
      {sent && (
        <p>
          <label>
            Uploaded {percent} % <progress max={sent.total} value={sent.bytes} aria-label="Upload progress" />
          </label>
        </p>
      )}
      <ErrorLine error={action.error} />
      {result && (
        <div role="status" aria-label="Import result">
          <p>
            Read {result.lines} lines: {result.stored} stored, {result.unchanged} unchanged, {result.refused} refused.
          </p>
          {result.errors.length > 0 && (
            <ul aria-label="Refused lines">
              {result.errors.slice(0, SHOWN_ERRORS).map((e) => (
                <li>
                  line {e.line}: {e.message}
                </li>
              ))}
              {result.refused > SHOWN_ERRORS && <li class="muted">and {result.refused - SHOWN_ERRORS} more</li>}
            </ul>
          )}
        </div>
      )}
      <button type="submit" disabled={action.busy || !file}>
        Import
      </button>
    </form>
  );
}

function SuppressionsPage() {
  const selection = useSelectionKey();
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  // The cursors of the pages walked through, to go back ("newer").
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const list = useAsync(() => get(`/v1/suppressions${query({ q: applied, cursor })}`), [selection, applied, cursor]);
  return (
    <Page
      title="Suppressions"
      actions={
        <a class="button secondary" href="/dashboard/api/suppressions.csv" download>
          Export CSV
        </a>
      }
    >
      <p class="muted">Email and sms to these addresses is not sent. The list is shared by the live and test environments.</p>
      <AddSuppression
        onAdded={() => {
          setCursors([undefined]);
          list.reload();
        }}
      />
      <ImportSuppressions
        onImported={() => {
          setCursors([undefined]);
          list.reload();
        }}
      />
      <h2>Suppressed addresses</h2>
      <form
        class="row"
        role="search"
        aria-label="Search suppressions"
        onSubmit={(e) => {
          e.preventDefault();
          setCursors([undefined]);
          setApplied(search.trim());
        }}
      >
        <Field label="Search">
          {(id) => (
            <input
              id={id}
              type="search"
              placeholder="part of an address"
              value={search}
              onInput={(e) => setSearch(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="secondary">
          Search
        </button>
      </form>
      <ErrorLine error={list.error} />
      {!list.data ? (
        <Loading what="suppressions" />
      ) : (
        <>
          <Table
            caption="Suppressed addresses"
            rows={list.data.data}
            rowKey={(s) => s.address}
            empty={applied ? `No suppressed address contains “${applied}”.` : 'No address is suppressed.'}
            columns={[
              { label: 'Address', cell: (s) => <code>{s.address}</code> },
              { label: 'Reason', cell: (s) => <Badge tone={REASON_TONES[s.reason] ?? 'warn'}>{s.reason}</Badge> },
              { label: 'Detail', cell: (s) => s.detail ?? <span class="muted">—</span> },
              { label: 'Message', cell: (s) => (s.messageId ? <code>{s.messageId}</code> : <span class="muted">—</span>) },
              { label: 'Since', cell: (s) => <Time iso={s.createdAt} /> },
              {
                label: 'Actions',
                cell: (s) => (
                  <ConfirmButton
                    small
                    danger
                    label={`Remove ${s.address}`}
                    question={
                      <>
                        Remove <code>{s.address}</code> from the suppression list? Messages to it will be sent again.
                      </>
                    }
                    confirmLabel="Remove"
                    onConfirm={async () => {
                      await del(`/v1/suppressions/${encodeURIComponent(s.address)}`);
                      list.reload();
                    }}
                  />
                ),
              },
            ]}
          />
          <Pager
            hasPrevious={cursors.length > 1}
            hasNext={Boolean(list.data.nextCursor)}
            onPrevious={() => setCursors(cursors.slice(0, -1))}
            onNext={() => setCursors([...cursors, list.data!.nextCursor ?? undefined])}
          />
        </>
      )}
    </Page>
  );
}

export const routes: Route[] = [{ pattern: '/suppressions', render: () => <SuppressionsPage /> }];
