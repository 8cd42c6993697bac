// A small router over the History API: the path below /dashboard picks the page, and links and
// navigate() change it without a reload (a reload serves the same page, so deep links work).
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

const BASE = '/dashboard';

function currentPath(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return p === '' ? '/' : p;
}

export function navigate(path: string, replace = false): void {
  const url = BASE + path;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  window.dispatchEvent(new Event('postern:navigate'));
}

/** The path below /dashboard and its query, kept current. */
export function useRoute(): { path: string; params: URLSearchParams } {
  const read = () => ({ path: currentPath(), params: new URLSearchParams(location.search) });
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    window.addEventListener('popstate', on);
    window.addEventListener('postern:navigate', on);
    return () => {
      window.removeEventListener('popstate', on);
      window.removeEventListener('postern:navigate', on);
    };
  }, []);
  return route;
}

/** Matches `/messages/:id` against a path; the named parts, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/');
  const b = path.split('/');
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(':')) out[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return out;
}

export function Link(props: { href: string; children: ComponentChildren } & Omit<JSX.HTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const { href, children, ...rest } = props;
  return (
    <a
      {...rest}
      href={BASE + href}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
