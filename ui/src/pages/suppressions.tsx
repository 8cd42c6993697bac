// The workspace's suppression list (shared by both environments): paged newest first, searched by
// part of an address, added to and removed from by hand, and exported whole as CSV.
import { useState } from 'preact/hooks';
import { del, get, post, query } from '../api';
import { Badge, ConfirmButton, ErrorLine, Field, Loading, Page, Pager, Table, Time, useAction, useAsync } from '../components';
import type { Route } from '../routes';
import { useSelectionKey } from '../session';

interface Suppression {
  address: string;
  reason: string;
  detail: string | null;
  messageId: string | null;
  createdAt: string;
}

const REASON_TONES: Record<string, 'bad' | 'warn' | 'muted'> = { bounce: 'bad', complaint: 'bad', unsubscribe: 'warn', manual: 'muted' };

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

function SuppressionsPage() {
  const selection = useSelectionKey();
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  // The cursors of the pages walked through, to go back ("newer").
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const list = useAsync(
    () => get<{ data: Suppression[]; nextCursor: string | null }>(`/v1/suppressions${query({ q: applied, cursor })}`),
    [selection, applied, cursor],
  );
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
