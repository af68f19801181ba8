// Entry point: takes the one-time token out of the address bar, builds the
// page's frame and routes the hash to a view.

import './styles.css';
import { ApiError, setToken, setUnauthorizedHandler } from './api';
import { h, replace, slot } from './dom';
import { parseRoute, takeToken, type Route } from './lib/nav';
import { sessionsView } from './views/sessions';
import { sessionView } from './views/session';
import { diffView } from './views/diff';
import { testRunView, testsView } from './views/tests';

export interface Ctx {
  /** Shows an API error in the banner (null clears it), keyed by who raised it. */
  error: (source: string, message: string | null) => void;
  title: (t: string) => void;
}

export type Unmount = () => void;

// 1. The token: keep it for this tab, take it out of the address bar.
{
  const { token, search } = takeToken(location.search);
  if (token) {
    setToken(token);
    history.replaceState(history.state, '', `${location.pathname}${search}${location.hash}`);
  }
}

// 2. The frame.
const app = document.getElementById('app') as HTMLElement;
const nav = h(
  'nav',
  { class: 'topnav', 'aria-label': 'Main' },
  h('a', { href: '#/', 'data-nav': 'sessions' }, 'Sessions'),
  h('a', { href: '#/tests', 'data-nav': 'tests' }, 'Tests'),
);
const bannerText = h('span', { class: 'banner-text' });
const banner = h(
  'div',
  { class: 'banner', 'data-testid': 'error-banner', role: 'alert' },
  bannerText,
  h('button', { type: 'button', class: 'small ghost', 'aria-label': 'Dismiss', onclick: () => clearAllErrors() }, '×'),
);
const main = h('main', { id: 'main', tabindex: -1 });
// The banner is in the page only while there is an error to show.
const bannerSlot = slot(banner);
replace(
  app,
  h('header', { class: 'topbar' }, h('a', { class: 'brand', href: '#/' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'Strobe'), nav),
  bannerSlot.anchor,
  main,
);

const errors = new Map<string, string>();
function renderBanner() {
  const msgs = [...new Set(errors.values())];
  bannerSlot.show(msgs.length > 0);
  bannerText.textContent = msgs.join(' · ');
}
function clearAllErrors() {
  errors.clear();
  renderBanner();
}

const ctx: Ctx = {
  error(source, message) {
    if (message) errors.set(source, message);
    else errors.delete(source);
    renderBanner();
  },
  title(t) {
    document.title = t ? `${t} · Strobe` : 'Strobe';
  },
};

// 3. A refused token replaces everything with how to get a fresh link.
let unauthorized = false;
setUnauthorizedHandler((e: ApiError) => {
  if (unauthorized) return;
  unauthorized = true;
  current?.();
  current = null;
  replace(
    app,
    h(
      'div',
      { class: 'unauthorized', 'data-testid': 'unauthorized', role: 'alert' },
      h('h1', null, 'This link has no valid access token'),
      h(
        'p',
        null,
        'The address this page was opened with carries a secret token, and the daemon did not accept it: ' +
          'it is missing, or the daemon was restarted since and made a new one.',
      ),
      h('p', null, 'Run ', h('code', null, 'strobe ui'), ' again and open the fresh URL it prints.'),
      h('p', { class: 'muted' }, `The daemon said: ${e.message}`),
    ),
  );
});

// 4. Routing.
let current: Unmount | null = null;
function route() {
  if (unauthorized) return;
  current?.();
  current = null;
  errors.clear();
  renderBanner();
  const r: Route = parseRoute(location.hash);
  for (const a of nav.querySelectorAll('a')) {
    const active = (a.dataset.nav === 'sessions' && (r.name === 'sessions' || r.name === 'session' || r.name === 'diff')) ||
      (a.dataset.nav === 'tests' && (r.name === 'tests' || r.name === 'test'));
    if (active) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  main.replaceChildren();
  switch (r.name) {
    case 'sessions':
      current = sessionsView(main, ctx);
      break;
    case 'session':
      current = sessionView(main, ctx, r.id);
      break;
    case 'tests':
      current = testsView(main, ctx);
      break;
    case 'test':
      current = testRunView(main, ctx, r.id);
      break;
    case 'diff':
      current = diffView(main, ctx, r.baseline, r.candidate);
      break;
    default:
      ctx.title('Not found');
      replace(main, h('div', { class: 'empty' }, h('h1', null, 'No such page'), h('p', null, h('a', { href: '#/' }, 'Back to the sessions'))));
  }
  window.scrollTo(0, 0);
}
window.addEventListener('hashchange', route);
route();
