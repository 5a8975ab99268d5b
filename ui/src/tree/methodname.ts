// methodname.ts -- parses the agent's method dictionary words (ui.md §4.1 "Method strings"):
//   <return type> <package.Class.method>(<arg types>) (<File>.java:<line>) [<jar path or name>]
// into the pieces the tree shows: a short label `Class.method(args)`, the package (full and
// abbreviated), file and line, jar name and path. CGLIB/lambda `$$xxxx` markers are stripped
// from the class name. A word that does not parse keeps `ok: false` and is shown as-is.

export interface MethodName {
  full: string;        // the dictionary word, unchanged
  ok: boolean;         // parsed
  ret: string;         // return type ('' when absent)
  pkg: string;         // com.example.orders.web
  cls: string;         // OrderController (CGLIB markers stripped)
  method: string;      // processOrder
  args: string;        // the argument types as written (fully qualified)
  shortArgs: string;   // the argument types without packages
  file: string;        // OrderController.java ('' when unknown)
  line: number;        // 0 when unknown
  jar: string;         // app.jar (name of the outermost jar)
  jarPath: string;     // the bracketed text as written
  label: string;       // OrderController.processOrder(String, int)
  short: string;       // OrderController.processOrder
  fqn: string;         // com.example.orders.web.OrderController.processOrder
}

// return type (optional) + qualified name + (args) + optional (source) + optional [jar]
const RE = /^(?:(\S+)\s+)?([^\s()]+)\(([^()]*)\)(?:\s*\(([^()]*)\))?(?:\s*\[(.*)\])?\s*$/;

/** Drops `$$EnhancerBySpringCGLIB$$1a2b`, `$$Lambda$12/0x...` and similar generated suffixes. */
export function stripGenerated(cls: string): string {
  const i = cls.indexOf('$$');
  return i > 0 ? cls.slice(0, i) : cls;
}

function simpleType(t: string): string {
  const s = t.trim();
  const gen = s.indexOf('<');
  const base = gen >= 0 ? s.slice(0, gen) : s;
  const dot = base.lastIndexOf('.');
  return dot >= 0 ? s.slice(dot + 1) : s;
}

/** `com.example.orders.web` -> `c.e.o.w` */
export function abbreviatePackage(pkg: string): string {
  if (!pkg) return '';
  return pkg.split('.').map((p) => p.charAt(0)).join('.');
}

export function parseMethod(full: string): MethodName {
  const m = RE.exec(full);
  if (!m || !m[2].includes('.')) return unparsed(full);
  const qual = m[2];
  const lastDot = qual.lastIndexOf('.');
  const method = qual.slice(lastDot + 1);
  const clsQual = qual.slice(0, lastDot);
  const clsDot = clsQual.lastIndexOf('.');
  const pkg = clsDot >= 0 ? clsQual.slice(0, clsDot) : '';
  const cls = stripGenerated(clsDot >= 0 ? clsQual.slice(clsDot + 1) : clsQual);
  if (!method || !cls) return unparsed(full);
  const args = m[3].trim();
  const shortArgs = args ? args.split(',').map(simpleType).join(', ') : '';
  let file = '';
  let line = 0;
  if (m[4] !== undefined) {
    const src = m[4].trim();
    const colon = src.lastIndexOf(':');
    if (colon > 0 && /^\d+$/.test(src.slice(colon + 1))) {
      file = src.slice(0, colon);
      line = Number(src.slice(colon + 1));
    } else file = src;
  }
  const jarPath = (m[5] ?? '').trim();
  return {
    full, ok: true, ret: m[1] ?? '', pkg, cls, method, args, shortArgs, file, line,
    jar: jarName(jarPath), jarPath,
    label: `${cls}.${method}(${shortArgs})`,
    short: `${cls}.${method}`,
    fqn: pkg ? `${pkg}.${cls}.${method}` : `${cls}.${method}`,
  };
}

/** The jar a class came from: fat jars `app.jar!/BOOT-INF/lib/x.jar` name the innermost
 *  jar, `app.jar!/BOOT-INF/classes` the outer one; paths are cut to their last segment. */
export function jarName(path: string): string {
  if (!path) return '';
  const parts = path.split('!').map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean);
  let pick = parts[0] ?? path;
  for (const p of parts) if (/\.(jar|war|ear)$/i.test(p)) pick = p;
  const slash = pick.lastIndexOf('/');
  return slash >= 0 ? pick.slice(slash + 1) : pick;
}

function unparsed(full: string): MethodName {
  return {
    full, ok: false, ret: '', pkg: '', cls: '', method: full, args: '', shortArgs: '', file: '', line: 0,
    jar: '', jarPath: '', label: full, short: full, fqn: full,
  };
}

/** One stack-trace line (§4.5 Get stacktrace):
 *  `at package.Class.method(File.java:line) [jar] (args) : returnType`. */
export function stackLine(n: MethodName): string {
  if (!n.ok) return `at ${n.full}`;
  const src = n.file ? (n.line ? `${n.file}:${n.line}` : n.file) : 'Unknown Source';
  const jar = n.jarPath ? ` [${n.jarPath}]` : '';
  const args = n.args ? `(${n.args})` : '(no args)';
  const ret = n.ret && n.ret !== 'void' ? ` : ${n.ret}` : '';
  return `at ${n.fqn}(${src})${jar} ${args}${ret}`;
}

/** Parsed names for a whole dictionary, computed on first use per index (a 100 000-node
 *  tree has far fewer distinct methods, and most are never shown). */
export class MethodNames {
  private cache: (MethodName | undefined)[];
  constructor(readonly words: string[]) {
    this.cache = new Array(words.length);
  }
  get(i: number): MethodName {
    let m = this.cache[i];
    if (!m) {
      m = parseMethod(this.words[i] ?? `#${i}`);
      this.cache[i] = m;
    }
    return m;
  }
}
