// The dashboard shell: session (setup link, login), the workspace and environment switcher, the
// navigation, and the page the path names. Each page module lists its own routes.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get, post, put, SESSION_ENDED, setCsrfToken } from './api';
import { ErrorLine, Loading, Page } from './components';
import { routes as accountRoutes } from './pages/account';
import { routes as adminRoutes } from './pages/admin';
import { routes as connectionRoutes } from './pages/connections';
import { routes as destinationRoutes } from './pages/destinations';
import { routes as warmUpRoutes } from './pages/warm-up';
import { routes as inboundRoutes } from './pages/inbound';
import { routes as keyRoutes } from './pages/keys';
import { Login, Setup } from './pages/login';
import { routes as messageRoutes } from './pages/messages';
import { routes as overviewRoutes } from './pages/overview';
import { routes as smtpRoutes } from './pages/smtp';
import { routes as suppressionRoutes } from './pages/suppressions';
import { routes as templateRoutes } from './pages/templates';
import { routes as webhookRoutes } from './pages/webhooks';
import type { Route } from './routes';
import { Link, match, navigate, useRoute } from './router';
import { SessionContext, type Me, type SessionApi } from './session';
import './styles.css';

const ROUTES: Route[] = [
  ...overviewRoutes,
  ...keyRoutes,
  ...smtpRoutes,
  ...messageRoutes,
  ...templateRoutes,
  ...inboundRoutes,
  ...webhookRoutes,
  ...suppressionRoutes,
  ...destinationRoutes,
  ...warmUpRoutes,
  ...connectionRoutes,
  ...adminRoutes,
  ...accountRoutes,
];

const NAV: { href: string; label: string; ownerOnly?: boolean }[] = [
  { href: '/', label: 'Overview' },
  { href: '/messages', label: 'Messages' },
  { href: '/templates', label: 'Templates' },
  { href: '/inbound', label: 'Inbound' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/suppressions', label: 'Suppressions' },
  { href: '/destinations', label: 'Destinations' },
  { href: '/connections', label: 'Connections' },
  { href: '/keys', label: 'API keys' },
  { href: '/smtp', label: 'SMTP' },
  { href: '/workspaces', label: 'Workspaces & operators', ownerOnly: true },
  { href: '/audit', label: 'Audit log', ownerOnly: true },
  { href: '/nodes', label: 'Cluster nodes', ownerOnly: true },
  { href: '/warm-up', label: 'Sources & warm-up', ownerOnly: true },
  { href: '/account', label: 'Account' },
];

function isCurrent(href: string, path: string): boolean {
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`);
}

function Switcher(props: { session: SessionApi }) {
  const { me, select } = props.session;
  const [error, setError] = useState<unknown>(null);
  const sel = me.selection;
  const change = (workspaceId: string, env: 'live' | 'test') => select(workspaceId, env).then(() => setError(null), setError);
  return (
    <div class="switcher">
      <label for="ws-select" class="sr-only">
        Workspace
      </label>
      <select id="ws-select" value={sel?.workspaceId ?? ''} onChange={(e) => change(e.currentTarget.value, sel?.env ?? 'live')}>
        {!sel && <option value="">Choose a workspace</option>}
        {me.workspaces.map((w) => (
          <option value={w.id}>{w.name}</option>
        ))}
      </select>
      <div class="env-toggle" role="group" aria-label="Environment">
        {(['live', 'test'] as const).map((env) => (
          <button
            type="button"
            class={sel?.env === env ? `env current ${env}` : 'env'}
            aria-pressed={sel?.env === env}
            disabled={!sel}
            onClick={() => sel && change(sel.workspaceId, env)}
          >
            {env}
          </button>
        ))}
      </div>
      <ErrorLine error={error} />
    </div>
  );
}

/**
 * The navigation: a sidebar on a wide screen; on a phone a menu button that shows and hides the
 * list (a disclosure: aria-expanded, aria-controls, Escape closes it), closed again once a link is
 * followed. The stylesheet decides which, so the button is there but hidden on a wide screen.
 */
function SideNav(props: { owner: boolean; path: string }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  // Back and forward change the page without a click on the list: close it then too.
  useEffect(() => setOpen(false), [props.path]);
  return (
    <nav
      class={open ? 'sidenav open' : 'sidenav'}
      aria-label="Dashboard"
      onKeyDown={(e) => {
        if (e.key !== 'Escape' || !open) return;
        setOpen(false);
        button.current?.focus();
      }}
    >
      <button
        type="button"
        ref={button}
        class="nav-toggle secondary"
        aria-expanded={open}
        aria-controls="nav-links"
        onClick={() => setOpen(!open)}
      >
        <span class="nav-toggle-icon" aria-hidden="true" />
        Menu
      </button>
      {/* Following a link closes the menu, even one to the page already open (no path change). */}
      <ul
        id="nav-links"
        onClick={(e) => {
          if ((e.target as Element).closest('a')) setOpen(false);
        }}
      >
        {NAV.filter((n) => !n.ownerOnly || props.owner).map((n) => (
          <li>
            <Link href={n.href} aria-current={isCurrent(n.href, props.path) ? 'page' : undefined}>
              {n.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function Shell(props: { session: SessionApi }) {
  const { path } = useRoute();
  const { me } = props.session;
  const owner = me.operator.role === 'owner';
  const selKey = me.selection ? `${me.selection.workspaceId}:${me.selection.env}` : 'none';
  let content = null;
  for (const route of ROUTES) {
    const params = match(route.pattern, path);
    if (!params) continue;
    content = route.ownerOnly && !owner ? <Page title="Owners only">Only an owner may open this page.</Page> : route.render(params);
    break;
  }
  if (!content)
    content = (
      <Page title="Not found">
        No such page. <Link href="/">Go to the overview</Link>.
      </Page>
    );
  if (!me.selection && !path.startsWith('/workspaces') && !path.startsWith('/audit') && !path.startsWith('/account')) {
    content = <Page title="No workspace">You are not a member of any workspace yet: ask an owner to add you.</Page>;
  }
  // The box requires a second factor and this operator has none: nothing else opens until it does.
  if (me.mustSetUpSecondFactor) content = accountRoutes[0].render({});
  return (
    <div class={`shell env-${me.selection?.env ?? 'none'}`}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Postern</span>
        <Switcher session={props.session} />
        <div class="who">
          <span>{me.operator.email}</span>
          <button type="button" class="secondary small" onClick={() => void props.session.logout()}>
            Log out
          </button>
        </div>
      </header>
      <SideNav owner={owner} path={path} />
      <main id="main" key={selKey}>
        {content}
      </main>
    </div>
  );
}

function App() {
  const { path, params } = useRoute();
  const [me, setMe] = useState<Me | null>(null);
  const [state, setState] = useState<'loading' | 'login' | 'ready' | 'error'>('loading');
  const [error, setError] = useState<unknown>(null);

  const adopt = (m: Me) => {
    setCsrfToken(m.csrfToken);
    setMe(m);
    setState('ready');
  };

  useEffect(() => {
    get('/dashboard/api/me').then(adopt, (e) => {
      if (e instanceof ApiError && e.status === 401) setState('login');
      else {
        setError(e);
        setState('error');
      }
    });
    const ended = () => {
      setMe(null);
      setState('login');
    };
    window.addEventListener(SESSION_ENDED, ended);
    return () => window.removeEventListener(SESSION_ENDED, ended);
  }, []);

  if (path === '/setup' && state !== 'ready') {
    return (
      <Setup
        token={params.get('token') ?? ''}
        onDone={(m) => {
          adopt(m);
          navigate('/', true);
        }}
      />
    );
  }
  if (state === 'loading') return <Loading />;
  if (state === 'error') return <ErrorLine error={error} />;
  if (state === 'login' || !me) {
    return (
      <Login
        onLogin={(m) => {
          adopt(m);
          if (path === '/setup') navigate('/', true);
        }}
      />
    );
  }
  const session: SessionApi = {
    me,
    select: async (workspaceId, env) => adopt(await put('/dashboard/api/selection', { workspaceId, env })),
    refresh: async () => adopt(await get('/dashboard/api/me')),
    logout: async () => {
      const { redirect } = await post('/dashboard/api/logout');
      // Signed in through the provider: log out there too; it sends the browser back here.
      if (redirect) return location.assign(redirect);
      setMe(null);
      setState('login');
    },
  };
  return (
    <SessionContext.Provider value={session}>
      <Shell session={session} />
    </SessionContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);
