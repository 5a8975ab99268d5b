import { describe, expect, it } from 'vitest';
import { sqlTokens, tokensFor, xmlTokens } from './syntax';

const join = (ts: { t: string }[]) => ts.map((x) => x.t).join('');
const cls = (ts: { t: string; c: string }[], c: string) => ts.filter((x) => x.c === c).map((x) => x.t.trim()).filter(Boolean);

describe('value colouring', () => {
  it('SQL: keywords, strings with doubled quotes, numbers, binds, comments', () => {
    const s = "SELECT a, 'it''s' FROM t -- note\nWHERE id = :id AND n > 42 /* x */ AND b = ?";
    const t = sqlTokens(s);
    expect(join(t)).toBe(s);
    expect(cls(t, 'kw')).toEqual(['SELECT', 'FROM', 'WHERE', 'AND', 'AND']);
    expect(cls(t, 'str')).toEqual(["'it''s'"]);
    expect(cls(t, 'num')).toEqual(['42']);
    expect(cls(t, 'bind')).toEqual([':id', '?']);
    expect(cls(t, 'com')).toEqual(['-- note', '/* x */']);
  });
  it('SQL: an identifier with digits is not a number', () => {
    expect(cls(sqlTokens('select t1.c2 from t1'), 'num')).toEqual([]);
  });
  it('XML: tags, attributes, values, text, comments', () => {
    const s = '<?xml version="1.0"?><a x="1" y=\'2\'><!-- c --><b>text</b><c/></a>';
    const t = xmlTokens(s);
    expect(join(t)).toBe(s);
    expect(cls(t, 'attr')).toEqual(['version', 'x', 'y']);
    expect(cls(t, 'str')).toEqual(['"1.0"', '"1"', "'2'"]);
    expect(cls(t, 'com')).toEqual(['<!-- c -->']);
    expect(t.some((x) => x.c === '' && x.t === 'text')).toBe(true);
  });
  it('picks a language by name and text', () => {
    expect(tokensFor('sql', 'select 1')).not.toBeNull();
    expect(tokensFor('request.xml', 'plain')).not.toBeNull();
    expect(tokensFor('web.url', '/x')).toBeNull();
    expect(join(xmlTokens('<a b>'))).toBe('<a b>');
  });
});
