// syntax.ts -- SQL and XML colouring of param values (ui.md §4.5–§4.7, issue 19 item 8),
// pure TS: text in, tokens out (text + class); the concatenated texts are always the input,
// so colouring never changes what is copied.

export type TokClass = '' | 'kw' | 'str' | 'num' | 'com' | 'bind' | 'tag' | 'attr' | 'punct';
export interface Tok { t: string; c: TokClass }

const SQL_KEYWORDS = new Set(`select from where and or not in is null like between exists group by order having join left right
inner outer full cross on as union all distinct insert into values update set delete merge using when then else end case
returning limit offset fetch first next rows only with recursive create table index view drop alter add primary key foreign
references begin commit rollback declare cursor for call exec execute asc desc nulls count sum min max avg coalesce nvl
over partition lateral any some true false`.split(/\s+/));

/** SQL: keywords, 'strings', "quoted identifiers" (plain), numbers, -- and block comments,
 *  :binds and ? placeholders. */
export function sqlTokens(s: string): Tok[] {
  const out: Tok[] = [];
  const push = (t: string, c: TokClass) => {
    if (!t) return;
    const last = out[out.length - 1];
    if (last && last.c === c) last.t += t;
    else out.push({ t, c });
  };
  let i = 0;
  while (i < s.length) {
    const ch = s[i];
    if (ch === '-' && s[i + 1] === '-') { const e = s.indexOf('\n', i); const j = e < 0 ? s.length : e; push(s.slice(i, j), 'com'); i = j; continue; }
    if (ch === '/' && s[i + 1] === '*') { const e = s.indexOf('*/', i + 2); const j = e < 0 ? s.length : e + 2; push(s.slice(i, j), 'com'); i = j; continue; }
    if (ch === "'") {
      let j = i + 1;
      while (j < s.length) { if (s[j] === "'") { if (s[j + 1] === "'") { j += 2; continue; } j++; break; } j++; }
      push(s.slice(i, j), 'str'); i = j; continue;
    }
    if (ch === '"') { const e = s.indexOf('"', i + 1); const j = e < 0 ? s.length : e + 1; push(s.slice(i, j), ''); i = j; continue; }
    if (ch === '?' || (ch === ':' && /[A-Za-z_0-9]/.test(s[i + 1] ?? '') && s[i - 1] !== ':')) {
      let j = i + 1;
      if (ch === ':') while (j < s.length && /[A-Za-z_0-9]/.test(s[j])) j++;
      push(s.slice(i, j), 'bind'); i = j; continue;
    }
    if (/[0-9]/.test(ch) && !/[A-Za-z_0-9]/.test(s[i - 1] ?? '')) {
      let j = i;
      while (j < s.length && /[0-9.eE]/.test(s[j])) j++;
      push(s.slice(i, j), 'num'); i = j; continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      let j = i;
      while (j < s.length && /[A-Za-z_0-9$#]/.test(s[j])) j++;
      const w = s.slice(i, j);
      push(w, SQL_KEYWORDS.has(w.toLowerCase()) ? 'kw' : '');
      i = j; continue;
    }
    push(ch, /[(),;=<>+*/.-]/.test(ch) ? 'punct' : '');
    i++;
  }
  return out;
}

/** XML: <tags> with their attribute names and "values", comments, text between tags. */
export function xmlTokens(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    if (s.startsWith('<!--', i)) { const e = s.indexOf('-->', i); const j = e < 0 ? s.length : e + 3; out.push({ t: s.slice(i, j), c: 'com' }); i = j; continue; }
    if (s.startsWith('<![CDATA[', i)) { const e = s.indexOf(']]>', i); const j = e < 0 ? s.length : e + 3; out.push({ t: s.slice(i, j), c: 'str' }); i = j; continue; }
    if (s[i] === '<') {
      const e = s.indexOf('>', i);
      const j = e < 0 ? s.length : e + 1;
      const m = /^<\/?[?!]?[^\s>/]*/.exec(s.slice(i, j))!;
      out.push({ t: m[0], c: 'tag' });
      let k = i + m[0].length;
      while (k < j) {
        const rest = s.slice(k, j);
        const a = /^(\s+)([^\s=>/]+)(\s*=\s*)("[^"]*"|'[^']*')?/.exec(rest);
        if (a) {
          out.push({ t: a[1], c: '' }, { t: a[2], c: 'attr' }, { t: a[3], c: 'punct' });
          if (a[4]) out.push({ t: a[4], c: 'str' });
          k += a[0].length;
          continue;
        }
        out.push({ t: rest, c: 'tag' });
        k = j;
      }
      i = j;
      continue;
    }
    const e = s.indexOf('<', i);
    const j = e < 0 ? s.length : e;
    out.push({ t: s.slice(i, j), c: '' });
    i = j;
  }
  return out;
}

/** The colouring a value gets: SQL for SQL-like names, XML for XML-looking text. */
export function tokensFor(name: string, text: string): Tok[] | null {
  if (/^(sql|sql\.monitor|mdx|cassandra\.query)$/.test(name)) return sqlTokens(text);
  const t = text.trimStart();
  if (/xml/i.test(name) || (t.startsWith('<') && t.includes('>'))) return xmlTokens(text);
  return null;
}
