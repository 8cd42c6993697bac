// Templates: the list and a create form; the editor of one template's draft (content per channel
// in the same shape as PUT /v1/templates/{slug}/draft, its variables), a live preview of the saved
// draft from sample variables (POST /v1/templates/{slug}/render with the draft's version; the email
// HTML in a sandboxed iframe served by /dashboard/view/templates), publish, the versions with a line
// diff between any two, and a test send through the test environment.
import { useEffect, useState } from 'preact/hooks';
import { get, post, put } from '../api';
import {
  Badge,
  ErrorLine,
  Facts,
  Field,
  IsolatedFrame,
  Loading,
  Notice,
  Page,
  StatusBadge,
  Table,
  Tabs,
  Time,
  useAction,
  useAsync,
} from '../components';
import { diffLines } from '../diff';
import { CHANNEL_HINTS, CHANNELS, type Channel } from '../../../src/contract/channels';
import { Link, navigate } from '../router';
import type { ResponseOf } from '../../../src/contract/responses';
import { VARIABLE_TYPES } from '../../../src/contract/vocabulary';
import type { Route } from '../routes';
import { useSelectionKey } from '../session';

type Detail = ResponseOf<'GET /v1/templates/:slug'>;
type Version = ResponseOf<'GET /v1/templates/:slug/versions'>['data'][number];
type Variable = Version['variables'][number];

const tpath = <R extends string = ''>(slug: string, rest = '' as R) => `/v1/templates/${encodeURIComponent(slug)}${rest}` as const;

function TemplateList() {
  const sel = useSelectionKey();
  const list = useAsync(() => get('/v1/templates'), [sel]);
  const [slug, setSlug] = useState('');
  const [channel, setChannel] = useState<Channel>('email');
  const [description, setDescription] = useState('');
  const create = useAction(async () => {
    const t = await post('/v1/templates', { slug, channel, description: description || undefined });
    navigate(`/templates/${t.slug}`);
  });
  return (
    <Page title="Templates">
      <form
        class="card row"
        aria-label="New template"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <Field label="Slug" hint="a-z, 0-9, - and _">
          {(id) => <input id={id} required value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />}
        </Field>
        <Field label="Channel">
          {(id) => (
            <select id={id} value={channel} onChange={(e) => setChannel(e.currentTarget.value as Channel)}>
              {CHANNELS.map((c) => (
                <option value={c}>{c}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Description">
          {(id) => <input id={id} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={create.busy}>
          Create template
        </button>
      </form>
      <ErrorLine error={create.error} />
      <ErrorLine error={list.error} />
      {list.data ? (
        <Table
          caption="Templates"
          rows={list.data.data}
          rowKey={(r) => r.slug}
          empty="No templates yet: create one above."
          columns={[
            { label: 'Slug', cell: (r) => <Link href={`/templates/${r.slug}`}>{r.slug}</Link> },
            { label: 'Channel', cell: (r) => r.channel },
            { label: 'Description', cell: (r) => r.description || <span class="muted">—</span> },
            { label: 'Status', cell: (r) => <StatusBadge status={r.status} /> },
            { label: 'Updated', cell: (r) => <Time iso={r.updatedAt} /> },
          ]}
        />
      ) : (
        !list.error && <Loading what="templates" />
      )}
    </Page>
  );
}

/** The form's text of a content value (JSON fields as pretty JSON). */
function toForm(channel: Channel, content: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of CHANNEL_HINTS[channel].fields) {
    const v = content[f.key];
    out[f.key] = v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  }
  return out;
}

/** The draft body's content from the form: empty fields left out, numbers and JSON parsed. */
function fromForm(channel: Channel, form: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of CHANNEL_HINTS[channel].fields) {
    const v = form[f.key] ?? '';
    if (v.trim() === '') continue;
    if (f.kind === 'number') out[f.key] = Number(v);
    else if (f.kind === 'json') {
      try {
        out[f.key] = JSON.parse(v);
      } catch {
        throw new Error(`${f.label}: not valid JSON`);
      }
    } else out[f.key] = v;
  }
  return out;
}

/** Sample variables for the preview: each declared variable, by type. */
function sampleFor(vars: Variable[]): string {
  const sample: Record<string, unknown> = {};
  for (const v of vars) {
    const value = v.type === 'number' ? 1 : v.type === 'boolean' ? true : v.type === 'object' ? {} : v.type === 'array' ? [] : v.name;
    // Dotted names nest.
    const parts = v.name.split('.');
    let at = sample;
    for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
    at[parts[parts.length - 1]] = value;
  }
  return JSON.stringify(sample, null, 2);
}

function parseVars(text: string): Record<string, unknown> {
  const v: unknown = text.trim() ? JSON.parse(text) : {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('sample variables must be a JSON object');
  return v as Record<string, unknown>;
}

type EditorTab = 'edit' | 'versions' | 'test';

function TemplateEditor(props: { slug: string }) {
  const sel = useSelectionKey();
  const [tick, setTick] = useState(0);
  const detail = useAsync(() => get(tpath(props.slug)), [props.slug, sel, tick]);
  const versions = useAsync(() => get(tpath(props.slug, '/versions')), [props.slug, sel, tick]);
  const [tab, setTab] = useState<EditorTab>('edit');
  const [sample, setSample] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const reload = () => setTick((t) => t + 1);

  const d = detail.data;
  const vs = versions.data?.data;
  if (!d || !vs) {
    return (
      <Page title={`Template ${props.slug}`}>
        <ErrorLine error={detail.error ?? versions.error} />
        {!detail.error && !versions.error && <Loading what="the template" />}
      </Page>
    );
  }
  const latest = vs[0];
  const sampleText = sample ?? sampleFor(latest?.variables ?? []);
  return (
    <Page title={`Template ${d.slug}`} actions={<PublishButton slug={d.slug} draft={d.draft?.versionNumber ?? null} onDone={reload} />}>
      <Facts
        items={[
          ['Channel', d.channel],
          ['Status', <StatusBadge status={d.status} />],
          ['Published version', d.currentVersion ? `v${d.currentVersion.versionNumber}` : 'never published'],
          [
            'Draft',
            d.draft ? (
              <>
                v{d.draft.versionNumber}, saved <Time iso={d.draft.updatedAt} />
              </>
            ) : (
              'none'
            ),
          ],
          ['Description', d.description || null],
        ]}
      />
      <Tabs<EditorTab>
        label="Template sections"
        current={tab}
        onChange={(k) => setTab(k)}
        tabs={[
          { key: 'edit', label: 'Draft and preview' },
          { key: 'versions', label: 'Versions' },
          { key: 'test', label: 'Send a test' },
        ]}
      />
      <div role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {tab === 'edit' && (
          <DraftEditor
            key={`${d.slug}:${latest?.versionNumber ?? 0}:${latest?.updatedAt ?? ''}`}
            detail={d}
            latest={latest}
            sample={sampleText}
            onSample={setSample}
            saved={saved}
            onSaved={() => {
              setSaved(true);
              reload();
            }}
          />
        )}
        {tab === 'versions' && <Versions versions={vs} channel={d.channel} />}
        {tab === 'test' && <TestSend slug={d.slug} channel={d.channel} sample={sampleText} onSample={setSample} />}
      </div>
    </Page>
  );
}

function PublishButton(props: { slug: string; draft: number | null; onDone(): void }) {
  const action = useAction(async () => {
    await post(tpath(props.slug, '/publish'));
    props.onDone();
  });
  return (
    <>
      <ErrorLine error={action.error} />
      <button type="button" disabled={props.draft === null || action.busy} onClick={() => void action.run()}>
        {props.draft === null ? 'Nothing to publish' : `Publish draft v${props.draft}`}
      </button>
    </>
  );
}

function DraftEditor(props: {
  detail: Detail;
  latest: Version | undefined;
  sample: string;
  onSample(text: string): void;
  saved: boolean;
  onSaved(): void;
}) {
  const channel = props.detail.channel;
  const [form, setForm] = useState(() => toForm(channel, props.latest?.content ?? {}));
  const [vars, setVars] = useState<Variable[]>(() => props.latest?.variables ?? []);
  const save = useAction(async () => {
    await put(tpath(props.detail.slug, '/draft'), { content: fromForm(channel, form), variables: vars });
    props.onSaved();
  });
  const setVar = (i: number, patch: Partial<Variable>) => setVars(vars.map((v, j) => (j === i ? { ...v, ...patch } : v)));
  return (
    <div class="split">
      <form
        aria-label="Draft"
        onSubmit={(e) => {
          e.preventDefault();
          void save.run();
        }}
      >
        <h2>Draft</h2>
        {props.latest?.status === 'published' && (
          <p class="muted">
            No draft: saving opens v{props.latest.versionNumber + 1} from the published v{props.latest.versionNumber}.
          </p>
        )}
        {CHANNEL_HINTS[channel].fields.map((f) => (
          <Field label={f.label}>
            {(id) =>
              f.kind === 'area' || f.kind === 'json' ? (
                <textarea
                  id={id}
                  class="mono"
                  rows={f.kind === 'json' ? 4 : 8}
                  value={form[f.key]}
                  onInput={(e) => setForm({ ...form, [f.key]: e.currentTarget.value })}
                />
              ) : (
                <input
                  id={id}
                  type={f.kind === 'number' ? 'number' : 'text'}
                  value={form[f.key]}
                  onInput={(e) => setForm({ ...form, [f.key]: e.currentTarget.value })}
                />
              )
            }
          </Field>
        ))}
        <h2>Variables</h2>
        {vars.length === 0 && <p class="muted">No declared variables. Mustache tags such as {'{{name}}'} work without them.</p>}
        {vars.map((v, i) => (
          <fieldset class="row">
            <legend class="sr-only">Variable {i + 1}</legend>
            <Field label="Name">
              {(id) => <input id={id} class="mono" value={v.name} onInput={(e) => setVar(i, { name: e.currentTarget.value })} />}
            </Field>
            <Field label="Type">
              {(id) => (
                <select id={id} value={v.type} onChange={(e) => setVar(i, { type: e.currentTarget.value })}>
                  {VARIABLE_TYPES.map((t) => (
                    <option value={t}>{t}</option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="Description">
              {(id) => <input id={id} value={v.description} onInput={(e) => setVar(i, { description: e.currentTarget.value })} />}
            </Field>
            <div class="checks">
              <label>
                <input type="checkbox" checked={v.required} onChange={(e) => setVar(i, { required: e.currentTarget.checked })} />
                Required
              </label>
            </div>
            <button type="button" class="secondary small" onClick={() => setVars(vars.filter((_, j) => j !== i))}>
              Remove variable {v.name}
            </button>
          </fieldset>
        ))}
        <p>
          <button
            type="button"
            class="secondary"
            onClick={() => setVars([...vars, { name: `var${vars.length + 1}`, type: 'string', description: '', required: false }])}
          >
            Add variable
          </button>
        </p>
        <ErrorLine error={save.error} />
        {props.saved && !save.error && <Notice>Draft saved; the preview shows it.</Notice>}
        <button type="submit" disabled={save.busy}>
          Save draft
        </button>
      </form>
      <Preview
        slug={props.detail.slug}
        channel={channel}
        version={props.latest?.versionNumber ?? null}
        sample={props.sample}
        onSample={props.onSample}
      />
    </div>
  );
}

interface RenderResult {
  channel: Channel;
  output: Record<string, unknown>;
  missing: string[];
}

/** The saved draft (the latest version) rendered with the sample variables, as they are typed. */
function Preview(props: { slug: string; channel: Channel; version: number | null; sample: string; onSample(t: string): void }) {
  const [result, setResult] = useState<{ render?: RenderResult; vars?: string; error?: unknown }>({});
  const [mobile, setMobile] = useState(false);
  useEffect(() => {
    if (props.version === null) return;
    let live = true;
    const timer = setTimeout(async () => {
      try {
        const vars = parseVars(props.sample);
        const render = await post(tpath(props.slug, '/render'), { vars, version: props.version });
        if (live) setResult({ render, vars: JSON.stringify(vars) });
      } catch (error) {
        if (live) setResult((r) => ({ ...r, error }));
      }
    }, 250);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [props.slug, props.version, props.sample]);
  const out = result.render?.output ?? {};
  return (
    <section aria-labelledby="preview-title">
      <h2 id="preview-title">Preview{props.version !== null ? ` of v${props.version}` : ''}</h2>
      <Field label="Sample variables (JSON)">
        {(id) => <textarea id={id} class="mono" rows={5} value={props.sample} onInput={(e) => props.onSample(e.currentTarget.value)} />}
      </Field>
      {props.version === null ? (
        <p class="muted">Save a draft to preview it.</p>
      ) : (
        <>
          {result.error ? <ErrorLine error={result.error} /> : null}
          {result.render && result.render.missing.length > 0 && (
            <Notice tone="warn">Missing variables: {result.render.missing.join(', ')}</Notice>
          )}
          {result.render && (
            <div data-preview>
              <Facts
                items={Object.entries(out)
                  .filter(([k, v]) => k !== 'html' && k !== 'text' && v !== '' && v !== undefined)
                  .map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])}
              />
              {CHANNEL_HINTS[props.channel].mime && result.vars !== undefined && (
                <>
                  <div class="checks">
                    <label>
                      <input type="checkbox" checked={mobile} onChange={(e) => setMobile(e.currentTarget.checked)} />
                      Mobile width
                    </label>
                  </div>
                  <IsolatedFrame
                    title="Email HTML preview"
                    class={mobile ? 'preview-frame mobile' : 'preview-frame'}
                    src={`/dashboard/view/templates/${encodeURIComponent(props.slug)}?version=${props.version}&vars=${encodeURIComponent(result.vars)}`}
                  />
                </>
              )}
              {typeof out.text === 'string' && out.text !== '' && (
                <>
                  <h3>Text</h3>
                  <pre class="preview-text">{out.text}</pre>
                </>
              )}
            </div>
          )}
        </>
      )}
    </section>
  );
}

/** A version as lines for the diff: each content field under its name, then the variables. */
function versionText(channel: Channel, v: Version): string {
  const lines: string[] = [];
  for (const f of CHANNEL_HINTS[channel].fields) {
    const value = v.content[f.key];
    if (value === undefined) continue;
    lines.push(`[${f.key}]`);
    lines.push(...(typeof value === 'string' ? value : JSON.stringify(value, null, 2)).split('\n'));
  }
  lines.push('[variables]');
  for (const x of v.variables)
    lines.push(`${x.name}: ${x.type}${x.required ? ', required' : ''}${x.description ? ` — ${x.description}` : ''}`);
  return lines.join('\n');
}

function Versions(props: { versions: Version[]; channel: Channel }) {
  const vs = props.versions;
  const [from, setFrom] = useState(vs[1]?.versionNumber ?? vs[0]?.versionNumber ?? 0);
  const [to, setTo] = useState(vs[0]?.versionNumber ?? 0);
  const a = vs.find((v) => v.versionNumber === from);
  const b = vs.find((v) => v.versionNumber === to);
  const lines = a && b ? diffLines(versionText(props.channel, a), versionText(props.channel, b)) : [];
  const changed = lines.filter((l) => l.kind !== 'same').length;
  const pick = (label: string, value: number, set: (n: number) => void) => (
    <Field label={label}>
      {(id) => (
        <select id={id} value={String(value)} onChange={(e) => set(Number(e.currentTarget.value))}>
          {vs.map((v) => (
            <option value={String(v.versionNumber)}>
              v{v.versionNumber} ({v.status})
            </option>
          ))}
        </select>
      )}
    </Field>
  );
  return (
    <>
      <h2>Versions</h2>
      <Table
        caption="Versions"
        rows={vs}
        rowKey={(v) => String(v.versionNumber)}
        empty="No versions yet: save a draft."
        columns={[
          { label: 'Version', cell: (v) => `v${v.versionNumber}` },
          { label: 'Status', cell: (v) => <Badge tone={v.status === 'published' ? 'ok' : 'info'}>{v.status}</Badge> },
          { label: 'Created', cell: (v) => <Time iso={v.createdAt} /> },
          { label: 'Published', cell: (v) => <Time iso={v.publishedAt} /> },
        ]}
      />
      {vs.length > 0 && (
        <section aria-labelledby="diff-title">
          <h2 id="diff-title">Compare versions</h2>
          <div class="row">
            {pick('From version', from, setFrom)}
            {pick('To version', to, setTo)}
          </div>
          <p class="muted">{changed === 0 ? 'The two versions are the same.' : `${changed} changed lines.`}</p>
          <pre class="diff" aria-label={`Diff from v${from} to v${to}`} tabIndex={0}>
            {lines.map((l) => (
              <span class={l.kind === 'add' ? 'diff-add' : l.kind === 'del' ? 'diff-del' : 'diff-same'} data-kind={l.kind}>
                {l.kind === 'add' ? '+ ' : l.kind === 'del' ? '- ' : '  '}
                {l.text}
                {'\n'}
              </span>
            ))}
          </pre>
        </section>
      )}
    </>
  );
}

function TestSend(props: { slug: string; channel: Channel; sample: string; onSample(t: string): void }) {
  const [to, setTo] = useState('');
  const [sent, setSent] = useState<{ id: string; status: string } | null>(null);
  const action = useAction(async () => {
    setSent(
      await post(`/dashboard/api/templates/${encodeURIComponent(props.slug)}/test-send`, {
        to,
        vars: parseVars(props.sample),
      }),
    );
  });
  return (
    <form
      aria-label="Send a test"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      <h2>Send a test</h2>
      <p class="muted">
        Sent through the test environment (whatever the top bar shows) with the latest version, draft included. Test sends reach no real
        provider; find them under Messages in the test environment.
      </p>
      <Field label="Recipient" hint={CHANNEL_HINTS[props.channel].recipient.hint}>
        {(id) => (
          <input
            id={id}
            required
            value={to}
            placeholder={CHANNEL_HINTS[props.channel].recipient.placeholder}
            onInput={(e) => setTo(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Variables (JSON)">
        {(id) => <textarea id={id} class="mono" rows={5} value={props.sample} onInput={(e) => props.onSample(e.currentTarget.value)} />}
      </Field>
      <ErrorLine error={action.error} />
      {sent && (
        <Notice>
          Test message <code>{sent.id}</code> {sent.status} in the test environment.
        </Notice>
      )}
      <button type="submit" disabled={action.busy}>
        Send test
      </button>
    </form>
  );
}

export const routes: Route[] = [
  { pattern: '/templates', render: () => <TemplateList /> },
  { pattern: '/templates/:slug', render: (p) => <TemplateEditor key={p.slug} slug={p.slug} /> },
];
