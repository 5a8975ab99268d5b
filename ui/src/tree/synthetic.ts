// synthetic.ts -- a deterministic synthetic TreeResp of any size, for the model benchmark
// (model.test.ts) and the dev-only `/tree?synthetic=100000` page that measures time to
// first paint on a big tree. Numbers are consistent (total = self + Σ children, calls =
// Σ descendants' invocations); some nodes carry SQL params with variants and nested binds,
// and a 20-frame pass-through chain sits under the root.

import type { Call, TreeNodeJson, TreeParam, TreeResp } from '../lib/api';

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

const PKGS = ['com.example.orders.web', 'com.example.orders.service', 'com.example.orders.dao', 'org.springframework.web.servlet',
  'org.hibernate.internal', 'java.util.concurrent', 'com.zaxxer.hikari.pool', 'oracle.jdbc.driver', 'io.netty.channel'];
const CLASSES = ['OrderController', 'OrderService', 'InvoiceDao', 'DispatcherServlet', 'SessionImpl', 'ThreadPoolExecutor',
  'HikariPool', 'OraclePreparedStatement', 'ChannelPipeline', 'PaymentService$$EnhancerBySpringCGLIB$$3f2a1b'];
const VERBS = ['process', 'load', 'find', 'save', 'validate', 'execute', 'handle', 'invoke', 'read', 'write'];
const NOUNS = ['Order', 'Invoice', 'Customer', 'Payment', 'Item', 'Account', 'Batch', 'Ticket'];

function methodWord(k: number): string {
  const pkg = PKGS[k % PKGS.length];
  const cls = CLASSES[(k >> 3) % CLASSES.length];
  const name = VERBS[(k >> 5) % VERBS.length] + NOUNS[(k >> 2) % NOUNS.length] + (k >> 9);
  const args = k % 3 === 0 ? '' : k % 3 === 1 ? 'java.lang.String' : 'long,java.util.Map';
  return `void ${pkg}.${cls}.${name}(${args}) (${cls.split('$')[0]}.java:${100 + (k % 900)}) [app.jar]`;
}

export function syntheticTree(nodes: number, seed = 7): TreeResp {
  const rand = rng(seed);
  const methods: string[] = [];
  const nm = Math.max(64, Math.min(5000, Math.floor(nodes / 20)));
  for (let k = 0; k < nm; k++) methods.push(methodWord(k));
  const chainBase = methods.length;
  for (let k = 0; k < 20; k++) methods.push(`void com.example.chain.Pass${k}.next() (Pass${k}.java:${10 + k}) [chain.jar]`);
  methods.push('void com.example.chain.Worker.work() (Worker.java:5) [chain.jar]');
  const params = ['sql', 'binds', 'web.url', 'web.method', 'request.id'];

  // shape: a random preorder walk (parent = previous node or one of its ancestors)
  const parent = new Int32Array(nodes);
  const depth = new Int32Array(nodes);
  const method = new Int32Array(nodes);
  parent[0] = -1;
  method[0] = 0;
  const used = new Map<number, Set<number>>();
  const path: number[] = [0];
  let n = 1;
  // the pass-through chain: 20 single-child frames then a worker
  for (let k = 0; k <= 20 && n < nodes; k++, n++) {
    parent[n] = k === 0 ? 0 : n - 1;
    depth[n] = k + 1;
    method[n] = chainBase + k;
  }
  for (; n < nodes; n++) {
    while (path.length > 1 && (rand() < 0.35 || path.length > 60)) path.pop();
    const p = path[path.length - 1];
    let s = used.get(p);
    if (!s) { s = new Set(); used.set(p, s); }
    let mi = Math.floor(rand() * nm);
    for (let tries = 0; s.has(mi) && tries < 50; tries++) mi = Math.floor(rand() * nm);
    if (s.has(mi)) { path.pop(); n--; if (path.length === 0) path.push(0); continue; }
    s.add(mi);
    parent[n] = p;
    depth[n] = depth[p] + 1;
    method[n] = mi;
    path.push(n);
  }
  // numbers, bottom-up (children have larger indexes than their parent)
  const self = new Float64Array(nodes), inv = new Float64Array(nodes), selfSusp = new Float64Array(nodes);
  const total = new Float64Array(nodes), susp = new Float64Array(nodes), calls = new Float64Array(nodes);
  for (let i = 0; i < nodes; i++) {
    const r = rand();
    self[i] = r < 0.5 ? 0 : Math.floor(-Math.log(1 - rand()) * 20);
    inv[i] = i === 0 ? 1 : r < 0.9 ? 1 : 1 + Math.floor(rand() * 40);
    selfSusp[i] = rand() < 0.02 ? Math.min(self[i], 40) : 0;
  }
  for (let i = 1; i <= 21 && i < nodes; i++) inv[i] = 1;
  if (nodes > 21) self[21] = 5000;   // the chain's worker does the real work
  for (let i = 0; i < nodes; i++) { total[i] = self[i]; susp[i] = selfSusp[i]; }
  for (let i = nodes - 1; i > 0; i--) {
    const p = parent[i];
    total[p] += total[i];
    susp[p] += susp[i];
    calls[p] += inv[i] + calls[i];
  }
  const json: TreeNodeJson[] = new Array(nodes);
  for (let i = 0; i < nodes; i++) {
    json[i] = {
      method: method[i], total: total[i], self: self[i], suspension: susp[i], self_suspension: selfSusp[i],
      invocations: inv[i], calls: calls[i], first: 0, last: total[i],
    };
    if (i === 0) json[i].params = rootParams();
    else if (i > 21 && i % 37 === 5) json[i].params = sqlParams(i, total[i], inv[i]);
  }
  for (let i = 1; i < nodes; i++) (json[parent[i]].children ??= []).push(json[i]);
  const start = 1795337944115;
  const call: Call = {
    id: 'synthetic', ts_ms: start, duration_ms: total[0], method: methods[0], namespace: 'synthetic', service: 'synthetic-service',
    pod: 'synthetic-pod_1795337000000', restart_ms: 1795337000000, thread: 'main', cpu_time: 0, wait_time: 0, memory_used: 0,
    suspend_ms: susp[0], calls: calls[0], transactions: 0, queue_wait_ms: 0, logs_generated: 0, logs_written: 0, file_read: 0,
    file_written: 0, net_read: 0, net_written: 0, error: false, params: { 'web.url': ['/synthetic'], 'web.method': ['GET'] },
    trace_available: true, trace_dropped_reason: null,
  };
  return { version: 1, methods, params, calls: [call], root: json[0], truncated: false, nodes, start_ms: start, end_ms: start + total[0] };
}

function rootParams(): TreeParam[] {
  return [
    { param: 2, groups: [{ value: '/synthetic', duration: 1, count: 1 }] },
    { param: 3, groups: [{ value: 'GET', duration: 1, count: 1 }] },
    { param: 4, groups: [{ value: 'req-4f2a9c', duration: 1, count: 1 }] },
  ];
}

function sqlParams(i: number, total: number, inv: number): TreeParam[] {
  const v1 = `SELECT o.id, o.status FROM orders o WHERE o.customer_id = ${i} AND o.state = 'OPEN'`;
  const v2 = `SELECT o.id, o.status FROM orders o WHERE o.customer_id = ${i + 1} AND o.state = 'CLOSED'`;
  return [{
    param: 0,
    groups: [{
      value: v1, duration: total, count: inv,
      variants: [{ value: v1, duration: Math.ceil(total / 2), count: 1 }, { value: v2, duration: Math.floor(total / 2), count: Math.max(1, inv - 1) }],
      params: [{ param: 1, groups: [{ value: `[${i}, 'OPEN']`, duration: total, count: inv }] }],
    }],
  }];
}
