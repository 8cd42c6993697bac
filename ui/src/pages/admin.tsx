// Owners only: workspaces (create, change plan), operators (invite with a password the owner sets,
// change role and workspaces, remove — never the last owner), the audit log (newest first,
// paged by `before`, filtered by operator), and the cluster's nodes.
import { useState } from 'preact/hooks';
import { del, get, post, put, query } from '../api';
import { Badge, ConfirmButton, ErrorLine, Field, Loading, Notice, Page, Pager, Table, Time, useAction, useAsync } from '../components';
import type { OperatorView, WorkspaceView } from '../../../src/contract/dashboard';
import type { ResponseOf } from '../../../src/contract/responses';
import type { Route } from '../routes';
import { useSession } from '../session';

type Workspace = WorkspaceView;
type Operator = OperatorView;
type ClusterNode = ResponseOf<'GET /v1/nodes'>['data'][number];

function CreateWorkspace(props: { plans: string[]; onCreated(): void }) {
  const [slug, setSlug] = useState('');
  const [name, setName] = useState('');
  const [plan, setPlan] = useState('free');
  const action = useAction(async () => {
    await post('/dashboard/api/workspaces', { slug, name, plan });
    setSlug('');
    setName('');
    props.onCreated();
  });
  return (
    <form
      class="card"
      aria-labelledby="new-workspace"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h3 id="new-workspace">Create a workspace</h3>
      <div class="row">
        <Field label="Slug" hint="a-z, 0-9 and -; also its shared inbound subdomain">
          {(id) => <input id={id} required maxLength={63} value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />}
        </Field>
        <Field label="Workspace name">
          {(id) => <input id={id} required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <Field label="Plan">
          {(id) => (
            <select id={id} value={plan} onChange={(e) => setPlan(e.currentTarget.value)}>
              {props.plans.map((p) => (
                <option value={p}>{p}</option>
              ))}
            </select>
          )}
        </Field>
        <button type="submit" disabled={action.busy}>
          Create workspace
        </button>
      </div>
      <ErrorLine error={action.error} />
    </form>
  );
}

function PlanSelect(props: { ws: Workspace; plans: string[]; onChanged(): void }) {
  const action = useAction(async (plan: string) => {
    await put(`/dashboard/api/workspaces/${encodeURIComponent(props.ws.id)}/plan`, { plan });
    props.onChanged();
  });
  return (
    <>
      <select
        aria-label={`Plan of ${props.ws.name}`}
        value={props.ws.plan}
        disabled={action.busy}
        onChange={(e) => void action.run(e.currentTarget.value)}
      >
        {props.plans.map((p) => (
          <option value={p}>{p}</option>
        ))}
      </select>
      <ErrorLine error={action.error} />
    </>
  );
}

function WorkspaceChecks(props: { workspaces: Workspace[]; chosen: string[]; onChange(ids: string[]): void; legend: string }) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      <div class="checks">
        {props.workspaces.map((w) => (
          <label>
            <input
              type="checkbox"
              checked={props.chosen.includes(w.id)}
              onChange={(e) => props.onChange(e.currentTarget.checked ? [...props.chosen, w.id] : props.chosen.filter((x) => x !== w.id))}
            />{' '}
            {w.name}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

function InviteOperator(props: { workspaces: Workspace[]; onCreated(): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<'owner' | 'member'>('member');
  const [chosen, setChosen] = useState<string[]>([]);
  const [done, setDone] = useState('');
  const action = useAction(async () => {
    await post('/dashboard/api/operators', { email, password, role, workspaces: role === 'member' ? chosen : [] });
    setDone(email);
    setEmail('');
    setPassword('');
    setChosen([]);
    props.onCreated();
  });
  return (
    <form
      class="card"
      aria-labelledby="invite-operator"
      autocomplete="off"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h3 id="invite-operator">Invite an operator</h3>
      <p class="muted">Set a first password and hand it over in person or through a channel you trust; the operator logs in with it.</p>
      <div class="row">
        <Field label="Operator email">
          {(id) => <input id={id} type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
        </Field>
        <Field label="First password" hint="at least 10 characters">
          {(id) => (
            <input
              id={id}
              type="password"
              autocomplete="new-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Role">
          {(id) => (
            <select id={id} value={role} onChange={(e) => setRole(e.currentTarget.value as 'owner' | 'member')}>
              <option value="member">member of chosen workspaces</option>
              <option value="owner">owner (every workspace, operators, audit)</option>
            </select>
          )}
        </Field>
      </div>
      {role === 'member' && <WorkspaceChecks legend="Member of" workspaces={props.workspaces} chosen={chosen} onChange={setChosen} />}
      <ErrorLine error={action.error} />
      {done && <Notice>{done} can now log in.</Notice>}
      <button type="submit" disabled={action.busy}>
        Invite operator
      </button>
    </form>
  );
}

function EditAccess(props: { op: Operator; workspaces: Workspace[]; onSaved(): void; onCancel(): void }) {
  const [role, setRole] = useState(props.op.role);
  const [chosen, setChosen] = useState(props.op.workspaces);
  const action = useAction(async () => {
    await put(`/dashboard/api/operators/${encodeURIComponent(props.op.id)}/access`, { role, workspaces: role === 'member' ? chosen : [] });
    props.onSaved();
  });
  return (
    <form
      class="card"
      aria-label={`Access of ${props.op.email}`}
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h3>Access of {props.op.email}</h3>
      <Field label="New role">
        {(id) => (
          <select id={id} value={role} onChange={(e) => setRole(e.currentTarget.value as 'owner' | 'member')}>
            <option value="member">member</option>
            <option value="owner">owner</option>
          </select>
        )}
      </Field>
      {role === 'member' && <WorkspaceChecks legend="Member of" workspaces={props.workspaces} chosen={chosen} onChange={setChosen} />}
      <ErrorLine error={action.error} />
      <div class="inline-actions">
        <button type="submit" disabled={action.busy}>
          Save access
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The box's sign-in rule: whether every operator must have a second factor. */
function SignInRule() {
  const rule = useAsync(() => get('/dashboard/api/security'), []);
  const change = useAction(async (on: boolean) => {
    await put('/dashboard/api/security', { requireSecondFactor: on });
    rule.reload();
  });
  return (
    <section aria-labelledby="sign-in-rule">
      <h2 id="sign-in-rule">Signing in</h2>
      <ErrorLine error={rule.error ?? change.error} />
      {rule.data && (
        <label>
          <input
            type="checkbox"
            checked={rule.data.requireSecondFactor}
            disabled={change.busy}
            onChange={(e) => void change.run(e.currentTarget.checked)}
          />
          Require a second factor of every operator (those without one can only set one up until they do)
        </label>
      )}
    </section>
  );
}

function WorkspacesPage() {
  const session = useSession();
  const workspaces = useAsync(() => get('/dashboard/api/workspaces'), []);
  const plans = useAsync(() => get('/dashboard/api/plans'), []);
  const operators = useAsync(() => get('/dashboard/api/operators'), []);
  const [editing, setEditing] = useState<string | null>(null);
  const wsList = workspaces.data?.data ?? [];
  const names = (ids: string[]) => ids.map((id) => wsList.find((w) => w.id === id)?.name ?? id).join(', ');
  const changedWorkspaces = () => {
    workspaces.reload();
    void session.refresh();
  };
  return (
    <Page title="Workspaces & operators">
      <h2>Workspaces</h2>
      <ErrorLine error={workspaces.error ?? plans.error} />
      {!workspaces.data || !plans.data ? (
        <Loading what="workspaces" />
      ) : (
        <>
          <Table
            caption="Workspaces"
            rows={wsList}
            rowKey={(w) => w.id}
            columns={[
              { label: 'Name', cell: (w) => w.name },
              { label: 'Slug', cell: (w) => <code>{w.slug}</code> },
              { label: 'Plan', cell: (w) => <PlanSelect ws={w} plans={plans.data!.data} onChanged={changedWorkspaces} /> },
              { label: 'Created', cell: (w) => <Time iso={w.createdAt} /> },
            ]}
          />
          <CreateWorkspace plans={plans.data.data} onCreated={changedWorkspaces} />
        </>
      )}
      <h2>Operators</h2>
      <ErrorLine error={operators.error} />
      {!operators.data ? (
        <Loading what="operators" />
      ) : (
        <Table
          caption="Operators"
          rows={operators.data.data}
          rowKey={(o) => o.id}
          columns={[
            { label: 'Email', cell: (o) => o.email },
            { label: 'Role', cell: (o) => <Badge tone={o.role === 'owner' ? 'info' : 'muted'}>{o.role}</Badge> },
            { label: 'Workspaces', cell: (o) => (o.role === 'owner' ? 'all' : names(o.workspaces) || <span class="muted">none</span>) },
            { label: 'Since', cell: (o) => <Time iso={o.createdAt} /> },
            {
              label: 'Second factor',
              cell: (o) => (o.secondFactor ? <Badge tone="ok">app</Badge> : <Badge tone="muted">none</Badge>),
            },
            {
              label: 'Actions',
              cell: (o) => (
                <span class="inline-actions">
                  {o.secondFactor && o.id !== session.me.operator.id && (
                    <ConfirmButton
                      small
                      label={`Reset the second factor of ${o.email}`}
                      question={`Remove the authenticator app and recovery codes of ${o.email}? They sign in with the password alone and set up a new app.`}
                      confirmLabel="Reset"
                      onConfirm={async () => {
                        await post(`/dashboard/api/operators/${encodeURIComponent(o.id)}/second-factor/reset`);
                        operators.reload();
                      }}
                    />
                  )}
                  <button type="button" class="secondary small" aria-label={`Change access of ${o.email}`} onClick={() => setEditing(o.id)}>
                    Change access
                  </button>
                  <ConfirmButton
                    small
                    danger
                    label={`Remove ${o.email}`}
                    question={`Remove the operator ${o.email}? Their sessions end at once.`}
                    confirmLabel="Remove"
                    onConfirm={async () => {
                      await del(`/dashboard/api/operators/${encodeURIComponent(o.id)}`);
                      operators.reload();
                    }}
                  />
                </span>
              ),
            },
          ]}
        />
      )}
      {editing && operators.data?.data.find((o) => o.id === editing) && (
        <EditAccess
          key={editing}
          op={operators.data.data.find((o) => o.id === editing)!}
          workspaces={wsList}
          onCancel={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            operators.reload();
          }}
        />
      )}
      <InviteOperator workspaces={wsList} onCreated={operators.reload} />
      <SignInRule />
    </Page>
  );
}

function AuditPage() {
  const [operator, setOperator] = useState('');
  const [applied, setApplied] = useState('');
  const [cursors, setCursors] = useState<(number | undefined)[]>([undefined]);
  const before = cursors[cursors.length - 1];
  const workspaces = useAsync(() => get('/dashboard/api/workspaces'), []);
  const log = useAsync(() => get(`/dashboard/api/audit${query({ operator: applied, before, limit: 50 })}`), [applied, before]);
  const wsName = (id: string | null) => (id ? (workspaces.data?.data.find((w) => w.id === id)?.slug ?? id) : null);
  return (
    <Page title="Audit log">
      <form
        class="row"
        role="search"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          setCursors([undefined]);
          setApplied(operator.trim());
        }}
      >
        <Field label="Operator email">
          {(id) => <input id={id} type="search" value={operator} onInput={(e) => setOperator(e.currentTarget.value)} />}
        </Field>
        <button type="submit" class="secondary">
          Filter
        </button>
      </form>
      <ErrorLine error={log.error} />
      {!log.data ? (
        <Loading what="the audit log" />
      ) : (
        <>
          <Table
            caption="Audit log, newest first"
            rows={log.data.data}
            rowKey={(a) => String(a.id)}
            empty="No entries."
            columns={[
              { label: 'When', cell: (a) => <Time iso={a.at} /> },
              { label: 'Who', cell: (a) => a.operator.email },
              { label: 'What', cell: (a) => <code>{a.action}</code> },
              { label: 'Target', cell: (a) => (a.target ? <span class="mono">{a.target}</span> : <span class="muted">—</span>) },
              {
                label: 'Workspace',
                cell: (a) => (a.workspaceId ? `${wsName(a.workspaceId)}${a.env ? ` (${a.env})` : ''}` : <span class="muted">—</span>),
              },
              { label: 'From', cell: (a) => <span class="mono">{a.ip}</span> },
              { label: 'Outcome', cell: (a) => <Badge tone={a.outcome === 'ok' ? 'ok' : 'bad'}>{a.outcome}</Badge> },
            ]}
          />
          <Pager
            hasPrevious={cursors.length > 1}
            hasNext={log.data.nextBefore !== null}
            onPrevious={() => setCursors(cursors.slice(0, -1))}
            onNext={() => setCursors([...cursors, log.data!.nextBefore ?? undefined])}
          />
        </>
      )}
    </Page>
  );
}

// The nodes sharing the database: one row each (this one marked), with its health as the server
// judged it from the age of its beat (ok, late, gone: about to be found dead and its work
// released), whether it is stopping, and its deliveries in flight and claimed messages.
const HEALTH_TONE = { ok: 'ok', late: 'warn', gone: 'bad' } as const;
function NodesPage() {
  const nodes = useAsync(() => get('/dashboard/api/nodes'), []);
  const standing = (n: ClusterNode) => (
    <>
      <Badge tone={HEALTH_TONE[n.health]}>{n.health}</Badge>
      {n.stopping ? (
        <>
          {' '}
          <Badge tone="warn">stopping</Badge>
        </>
      ) : null}
    </>
  );
  return (
    <Page title="Cluster nodes">
      <p class="muted">
        Every Postern process sharing this database. A node is late when it has not beaten for two heartbeats, and gone past the node
        timeout: it is presumed dead, and the messages it had claimed go to the others at once.
      </p>
      <ErrorLine error={nodes.error} />
      {!nodes.data ? (
        <Loading what="the nodes" />
      ) : (
        <>
          <Table
            caption={`Nodes (${nodes.data.data.length})`}
            rows={nodes.data.data}
            rowKey={(n) => n.id}
            empty="No nodes."
            columns={[
              {
                label: 'Node',
                cell: (n) => (
                  <span class="mono">
                    {n.id.slice(0, 8)}
                    {n.self ? ' (this one)' : ''}
                  </span>
                ),
              },
              { label: 'Host', cell: (n) => `${n.host} (pid ${n.pid})` },
              { label: 'Version', cell: (n) => n.version },
              { label: 'Started', cell: (n) => <Time iso={n.startedAt} /> },
              { label: 'Last heartbeat', cell: (n) => <Time iso={n.heartbeatAt} /> },
              { label: 'Health', cell: (n) => standing(n) },
              { label: 'In flight', cell: (n) => n.inFlight },
              { label: 'Claimed', cell: (n) => n.claimed },
            ]}
          />
          <button type="button" class="secondary" onClick={() => nodes.reload()}>
            Refresh
          </button>
        </>
      )}
    </Page>
  );
}

export const routes: Route[] = [
  { pattern: '/workspaces', render: () => <WorkspacesPage />, ownerOnly: true },
  { pattern: '/audit', render: () => <AuditPage />, ownerOnly: true },
  { pattern: '/nodes', render: () => <NodesPage />, ownerOnly: true },
];
