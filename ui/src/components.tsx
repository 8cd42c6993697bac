// The pieces every page is built from: page frame, async data, errors, tables, pager, badges,
// copy buttons, secrets shown once, a confirmation dialog, tabs and form fields.
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Postern`;
  }, [props.title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title">{props.title}</h1>
        {props.actions && <div class="page-actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.describe();
  if (error instanceof Error) return error.message;
  return String(error);
}

export function ErrorLine(props: { error: unknown }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {describeError(props.error)}
    </p>
  );
}

export function Notice(props: { children: ComponentChildren; tone?: 'ok' | 'warn' }) {
  return (
    <p class={`notice ${props.tone ?? 'ok'}`} role="status">
      {props.children}
    </p>
  );
}

/** Loads data with `load`, again when `deps` change or on reload(); keeps the last data while loading. */
export function useAsync<T>(
  load: () => Promise<T>,
  deps: unknown[],
): { data: T | undefined; error: unknown; loading: boolean; reload(): void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error) => live && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** Runs an action, tracking busy and error, for buttons and forms. */
export function useAction<A extends unknown[]>(
  action: (...args: A) => Promise<unknown>,
): { run(...args: A): Promise<boolean>; busy: boolean; error: unknown; clear(): void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await action(...args);
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(null) };
}

export function Loading(props: { what?: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading{props.what ? ` ${props.what}` : ''}…
    </p>
  );
}

function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

export interface Column<T> {
  label: string;
  cell(row: T): ComponentChildren;
  class?: string;
}

/**
 * The box a table scrolls sideways in when it is wider than the screen (a phone), so the page
 * never does. While it scrolls it is a labelled region and a tab stop, so it can be scrolled from
 * the keyboard (a table of plain text has nothing else to focus); when it fits, it is neither.
 */
export function ScrollBox(props: { label: string; children: ComponentChildren }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const box = ref.current;
    if (!box) return;
    const check = () => setScrolls(box.scrollWidth > box.clientWidth);
    check();
    const observer = new ResizeObserver(check);
    observer.observe(box);
    if (box.firstElementChild) observer.observe(box.firstElementChild);
    return () => observer.disconnect();
  }, []);
  return (
    <div
      ref={ref}
      class="table-wrap"
      role={scrolls ? 'region' : undefined}
      aria-label={scrolls ? props.label : undefined}
      tabIndex={scrolls ? 0 : undefined}
    >
      {props.children}
    </div>
  );
}

export function Table<T>(props: { caption: string; columns: Column<T>[]; rows: T[]; rowKey(row: T): string; empty?: ComponentChildren }) {
  if (props.rows.length === 0) return <Empty>{props.empty ?? 'Nothing here yet.'}</Empty>;
  return (
    <ScrollBox label={props.caption}>
      <table>
        <caption class="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th scope="col" class={c.class}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={props.rowKey(r)}>
              {props.columns.map((c) => (
                <td class={c.class}>{c.cell(r)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  );
}

/** "Newer"/"older" paging over an API cursor: the page keeps the cursors it came through. */
export function Pager(props: { hasPrevious: boolean; hasNext: boolean; onPrevious(): void; onNext(): void }) {
  if (!props.hasPrevious && !props.hasNext) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={!props.hasPrevious} onClick={props.onPrevious}>
        ← Newer
      </button>
      <button type="button" class="secondary" disabled={!props.hasNext} onClick={props.onNext}>
        Older →
      </button>
    </nav>
  );
}

export type Tone = 'ok' | 'warn' | 'bad' | 'info' | 'muted';

export function Badge(props: { tone?: Tone; children: ComponentChildren; title?: string }) {
  return (
    <span class={`badge ${props.tone ?? 'muted'}`} title={props.title}>
      {props.children}
    </span>
  );
}

const STATUS_TONES: Record<string, Tone> = {
  delivered: 'ok',
  sent: 'ok',
  verified: 'ok',
  active: 'ok',
  pass: 'ok',
  queued: 'info',
  scheduled: 'info',
  dispatched: 'info',
  pending: 'info',
  rendered: 'info',
  deferred: 'warn',
  suppressed: 'warn',
  opted_out: 'warn',
  canceled: 'muted',
  neutral: 'muted',
  none: 'muted',
  failed: 'bad',
  bounced: 'bad',
  blocked: 'bad',
  complained: 'bad',
  fail: 'bad',
  softfail: 'warn',
  expired: 'bad',
  disabled: 'bad',
};

export function StatusBadge(props: { status: string | null | undefined }) {
  const s = props.status ?? 'none';
  return <Badge tone={STATUS_TONES[s] ?? 'muted'}>{s.replace(/_/g, ' ')}</Badge>;
}

export function Time(props: { iso: string | null | undefined }) {
  if (!props.iso) return <span class="muted">—</span>;
  const d = new Date(props.iso);
  return (
    <time dateTime={props.iso} title={props.iso}>
      {d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })}
    </time>
  );
}

export function CopyButton(props: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="secondary small"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(props.text);
        } catch {
          // No clipboard (an insecure origin): the value is selectable beside the button.
        }
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
      aria-label={props.label ?? 'Copy'}
    >
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

/** A secret shown once (a new key, a webhook secret): selectable, with a copy button and a warning. */
export function SecretOnce(props: { label: string; value: string; onDone(): void }) {
  return (
    <div class="secret" role="region" aria-label={props.label}>
      <p>
        <strong>{props.label}</strong> — shown only this once. Copy it now; it cannot be retrieved later.
      </p>
      <div class="secret-row">
        <code class="secret-value" data-secret>
          {props.value}
        </code>
        <CopyButton text={props.value} label={`Copy ${props.label}`} />
      </div>
      <button type="button" class="secondary" onClick={props.onDone}>
        I have copied it
      </button>
    </div>
  );
}

/** A button that asks before it acts, in a modal dialog. */
export function ConfirmButton(props: {
  label: string;
  question: ComponentChildren;
  confirmLabel?: string;
  danger?: boolean;
  onConfirm(): Promise<unknown>;
  small?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const action = useAction(props.onConfirm);
  return (
    <>
      <button
        type="button"
        class={`${props.danger ? 'danger' : 'secondary'}${props.small ? ' small' : ''}`}
        onClick={() => ref.current?.showModal()}
      >
        {props.label}
      </button>
      <dialog ref={ref} aria-label={props.label}>
        <p>{props.question}</p>
        <ErrorLine error={action.error} />
        <div class="dialog-actions">
          <button
            type="button"
            class={props.danger ? 'danger' : ''}
            disabled={action.busy}
            onClick={async () => {
              if (await action.run()) ref.current?.close();
            }}
          >
            {props.confirmLabel ?? props.label}
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              action.clear();
              ref.current?.close();
            }}
          >
            Cancel
          </button>
        </div>
      </dialog>
    </>
  );
}

export function Tabs<K extends string>(props: { label: string; tabs: { key: K; label: string }[]; current: K; onChange(key: K): void }) {
  return (
    <div class="tabs" role="tablist" aria-label={props.label}>
      {props.tabs.map((t) => (
        <button
          type="button"
          role="tab"
          id={`tab-${t.key}`}
          aria-selected={t.key === props.current}
          class={t.key === props.current ? 'tab current' : 'tab'}
          onClick={() => props.onChange(t.key)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

let fieldIds = 0;

/** A labelled form control; the child gets the id the label points at. */
export function Field(props: { label: string; hint?: string; children: (id: string) => JSX.Element }) {
  const [id] = useState(() => `f${++fieldIds}`);
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id)}
      {props.hint && <small class="muted">{props.hint}</small>}
    </div>
  );
}

/** The environment a new key or SMTP credential belongs to. */
export function EnvField(props: { value: 'live' | 'test'; onChange: (env: 'live' | 'test') => void }) {
  return (
    <Field label="Environment">
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value as 'live' | 'test')}>
          <option value="live">live</option>
          <option value="test">test</option>
        </select>
      )}
    </Field>
  );
}

/** A definition list of label/value pairs (message and domain details). */
export function Facts(props: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {props.items.map(([k, v]) => (
        <div class="fact">
          <dt>{k}</dt>
          <dd>{v ?? <span class="muted">—</span>}</dd>
        </div>
      ))}
    </dl>
  );
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * HTML that is not the dashboard's (received mail, a sent message, a template preview) in a
 * sandboxed frame served by /dashboard/view, with remote images blocked until the operator asks:
 * loading them tells their server the mail was opened, from where and when. The one control for
 * every such view; the server's side of the rule is isolated-html.ts imageSourcesAsked.
 */
export function IsolatedFrame(props: { src: string; title: string; class?: string }) {
  const [remote, setRemote] = useState(false);
  const src = remote ? `${props.src}${props.src.includes('?') ? '&' : '?'}remote=1` : props.src;
  return (
    <>
      <div class="row">
        {remote ? (
          <p class="muted">Remote content loaded.</p>
        ) : (
          <>
            <p class="muted">Remote images are blocked: loading them tells their server the message was opened.</p>
            <button type="button" class="secondary" onClick={() => setRemote(true)}>
              Load remote content
            </button>
          </>
        )}
      </div>
      <iframe
        key={remote ? 'remote' : 'local'}
        title={props.title}
        class={props.class ?? 'preview-frame'}
        sandbox="allow-popups allow-popups-to-escape-sandbox"
        src={src}
      />
    </>
  );
}
