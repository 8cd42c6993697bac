// Key scopes (workspaces/scopes.ts): how `--scopes` is read, and which scope lets a key act.
import t from 'tap';
import { allows, parseScopes } from '../../src/workspaces/scopes.js';

t.test('reading a scope list', async (t) => {
  t.same(parseScopes(undefined), { ok: true, scopes: null }, 'no list: unscoped');
  t.same(parseScopes(''), { ok: true, scopes: null }, 'empty: unscoped');
  t.same(parseScopes('  '), { ok: true, scopes: null }, 'blank: unscoped');
  t.same(parseScopes('read'), { ok: true, scopes: ['read'] });
  t.same(parseScopes(' Read , SEND,read,,cancel '), { ok: true, scopes: ['read', 'send', 'cancel'] }, 'trimmed, lowercased, deduplicated');
  t.same(parseScopes('read,send,cancel,inbound,webhooks'), { ok: true, scopes: ['read', 'send', 'cancel', 'inbound', 'webhooks'] });
  t.same(parseScopes(','), { ok: true, scopes: [] }, 'only separators: no scope at all, not unscoped');
  t.same(
    parseScopes('read,admin,Write'),
    { ok: false, message: 'unknown scope admin, write; scopes are read, send, cancel, inbound, webhooks, cluster' },
    'unknown scopes are named, with the valid ones',
  );
  t.same(parseScopes('reads'), { ok: false, message: 'unknown scope reads; scopes are read, send, cancel, inbound, webhooks, cluster' });
});

t.test('which scope lets a key act', async (t) => {
  for (const needed of ['read', 'send', 'cancel', 'inbound', 'webhooks'] as const) {
    t.ok(allows(null, needed), `unscoped may ${needed}`);
    t.ok(allows([needed], needed), `${needed} may ${needed}`);
    t.notOk(allows([], needed), `no scope may not ${needed}`);
  }
  t.ok(parseScopes('cluster').ok, 'cluster is a scope');
  t.notOk(allows(null, 'cluster'), 'an unscoped key does not see the cluster: the nodes are the box’s, not a workspace’s');
  t.ok(allows(['cluster'], 'cluster'), 'a key named with cluster does');
  t.ok(allows(['read', 'cluster'], 'read'));
  t.notOk(allows(['cluster'], 'read'), 'cluster is not read');
  t.notOk(allows(['read', 'send', 'cancel', 'inbound', 'webhooks'], 'cluster'), 'every workspace scope is still not cluster');
  t.notOk(allows(['read'], 'inbound'), 'read is not inbound');
  t.notOk(allows(['read', 'send'], 'cancel'), 'send is not cancel');
  t.ok(allows(['send', 'cancel'], 'cancel'));
});
