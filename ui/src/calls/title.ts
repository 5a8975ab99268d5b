// title.ts -- the human title of a call (ui.md §3.3 rules 1 to 4) and the short
// `Class.method` of a root method signature; the trace ids a call carries (the "ids" chip). Pure; memoised per call object because the
// virtual table asks again for every row it re-renders.

import type { Call } from '../lib/api';

export interface Title { text: string; tooltip: string }

/** Params that never show in a rule-4 title: the error marker, the title/web params of
 *  rules 1–2, thread name, start stamp and XA id (§3.3), and `_`-prefixed internals. */
const SKIP = new Set([
  'call.red', 'profiler.title', 'web.url', 'web.method', 'web.query', 'web.remote.addr',
  'thread.name', 'java.thread', 'time.start', 'call.start', 'start.stamp', 'xa.id', 'xid', 'transaction.xid',
]);

/** `ret pkg.Class.method(args) (File.java:12) [jar]` → `Class.method`. */
export function shortMethod(sig: string): string {
  const paren = sig.indexOf('(');
  const head = paren >= 0 ? sig.slice(0, paren) : sig;
  const name = head.trim().split(/\s+/).pop() ?? head;
  const parts = name.split('.');
  return parts.length >= 2 ? parts.slice(-2).join('.') : name;
}

/** URL without scheme and host: `http://x/api/orders?page=2` → `/api/orders?page=2`. */
export function urlPath(url: string): string {
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*(.*)$/.exec(url);
  const p = m ? m[1] : url;
  return p === '' ? '/' : p;
}

function distinct(xs: string[] | undefined): string[] {
  return xs ? [...new Set(xs.filter((x) => x !== ''))] : [];
}

function webTitle(p: Record<string, string[]>): string {
  const urls = distinct(p['web.url']);
  const method = distinct(p['web.method'])[0];
  const query = distinct(p['web.query'])[0];
  let s: string;
  if (urls.length > 1) s = `${urls.length} pages: ${urls.map(urlPath).join(', ')}`;
  else {
    s = urlPath(urls[0]);
    if (query && !s.includes('?')) s += `?${query}`;
    if (method) s = `${method} ${s}`;
  }
  const addrs = distinct(p['web.remote.addr']);
  if (addrs.length) s += `, client: ${addrs.join(', ')}`;
  return s;
}

function paramsText(p: Record<string, string[]>): string {
  const out: string[] = [];
  for (const name of Object.keys(p).sort()) {
    if (SKIP.has(name) || name.startsWith('_')) continue;
    const vals = distinct(p[name]);
    if (vals.length) out.push(`${name}: ${vals.join(', ')}`);
  }
  return out.join('; ');
}

/** The first value of the first of `names` the call has. */
function first(p: Record<string, string[]>, names: string[]): string | undefined {
  for (const n of names) { const v = distinct(p[n])[0]; if (v !== undefined) return v; }
  return undefined;
}

const FRAGMENT = 60;

/** Rule 3: a JMS consumer (`onMessage(…Message)` or jms.* params), a Quartz job
 *  (`execute(org.quartz.JobExecutionContext)` or quartz.* params), a message listener on a
 *  queue param. The param names are the agent plugins' (`jms.consumer`, `jms.destination`,
 *  `jms.text`, `quartz.job`, `quartz.job.type`, `queue`); the method alone is enough. */
function messagingTitle(method: string, p: Record<string, string[]>): string | null {
  const short = shortMethod(method);
  const cls = short.split('.')[0];
  const args = method.slice(method.indexOf('(') + 1);
  const isJms = /\.onMessage$/.test(short) && /\b(javax|jakarta)\.jms\.\w*Message\b/.test(args);
  if (isJms || first(p, ['jms.consumer', 'jms.destination'])) {
    let t = `JMS: ${first(p, ['jms.consumer']) ?? cls}`;
    const dest = first(p, ['jms.destination', 'jms.queue', 'jms.topic']);
    if (dest) t += ` ${dest}`;
    const text = first(p, ['jms.text', 'jms.message']);
    if (text) t += ` “${text.length > FRAGMENT ? text.slice(0, FRAGMENT) + '…' : text}”`;
    return t;
  }
  const isQuartz = /\.execute$/.test(short) && /\borg\.quartz\.JobExecutionContext\b/.test(args);
  if (isQuartz || first(p, ['quartz.job'])) {
    const name = first(p, ['quartz.job', 'quartz.job.name']);
    return `${first(p, ['quartz.job.type']) ?? cls} quartz job${name ? ` ${name}` : ''}`;
  }
  const queue = first(p, ['queue', 'queue.name']);
  if (queue) return `${short} on queue ${queue}`;
  return null;
}

/** The trace/request ids of a call (§3.3 "ids" chip): name and values, in this order. */
export const TRACE_ID_PARAMS = ['brave.trace_id', 'brave.span_id', 'x-request-id', 'cloud.x.request.id'];

/** The link of one id through the server's --trace-link template: {id} and {name} replaced
 *  (URL-encoded); null without a template, or for one that is not http(s) (the server
 *  refuses those; this is the second lock). */
export function traceLink(template: string | null | undefined, name: string, id: string): string | null {
  if (!template || !/^https?:\/\//i.test(template) || !template.includes('{id}')) return null;
  return template.split('{id}').join(encodeURIComponent(id)).split('{name}').join(encodeURIComponent(name));
}

export function traceIds(c: Pick<Call, 'params'>): [string, string][] {
  const out: [string, string][] = [];
  for (const n of TRACE_ID_PARAMS) for (const v of distinct(c.params?.[n])) out.push([n, v]);
  return out;
}

export function callTitle(c: Pick<Call, 'method' | 'params'>): Title {
  const p = c.params ?? {};
  const given = distinct(p['profiler.title'])[0];
  if (given) return { text: given, tooltip: c.method };
  if (distinct(p['web.url']).length) return { text: webTitle(p), tooltip: c.method };
  const msg = c.method.startsWith('#') ? null : messagingTitle(c.method, p);
  if (msg) return { text: msg, tooltip: c.method };
  const short = c.method.startsWith('#') ? c.method : shortMethod(c.method);
  const extra = paramsText(p);
  return { text: extra ? `${short} ${extra}` : short, tooltip: c.method };
}

const memo = new WeakMap<object, Title>();

export function cachedTitle(c: Call): Title {
  let t = memo.get(c);
  if (!t) { t = callTitle(c); memo.set(c, t); }
  return t;
}
