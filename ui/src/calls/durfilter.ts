// durfilter.ts -- the duration filter of ui.md §3.4: the preset chips and a client-side
// parser of the expression grammar, so an invalid expression is marked red before it
// reaches the server (which parses the same grammar again and stays the authority).

/** Inclusive bounds in whole ms; null = no bound. Both null = no duration filter. */
export interface DurFilter { min: number | null; max: number | null }

export interface DurChip { key: string; label: string; value: string }

/** The preset chips. `value` is what the URL's `dur` parameter holds for the chip. */
export const DUR_CHIPS: DurChip[] = [
  { key: 'all', label: 'All', value: 'all' },
  { key: '10ms', label: '≥10ms', value: '>=10ms' },
  { key: '100ms', label: '≥100ms', value: '>=100ms' },
  { key: '500ms', label: '≥500ms', value: '>=500ms' },
  { key: '1s', label: '≥1s', value: '>=1s' },
  { key: '3s', label: '≥3s', value: '>=3s' },
  { key: '5s', label: '≥5s', value: '>=5s' },
  { key: '30s', label: '≥30s', value: '>=30s' },
];

export const DEFAULT_DUR = '>=500ms';

const AMOUNT = '(\\d+(?:\\.\\d+)?)(ms|s)?';
const RE_LOWER = new RegExp(`^(>=|>)?${AMOUNT}$`);
const RE_UPPER = new RegExp(`^(<=|<)${AMOUNT}$`);
const RE_EXACT = new RegExp(`^=${AMOUNT}$`);
const RE_RANGE = new RegExp(`^${AMOUNT}\\.{2,}${AMOUNT}$`);

/** number + unit (no unit = seconds) → whole ms. */
function amount(num: string, unit: string | undefined): number {
  return Math.round(Number(num) * (unit === 'ms' ? 1 : 1000));
}

/** Parses a §3.4 expression. Empty text (and the URL word `all`) = no filter;
 *  null = invalid. Spaces anywhere are ignored. */
export function parseDur(text: string): DurFilter | null {
  const t = text.replace(/\s+/g, '');
  if (t === '' || t === 'all') return { min: null, max: null };
  let m = RE_LOWER.exec(t);
  if (m) return { min: amount(m[2], m[3]), max: null };
  m = RE_UPPER.exec(t);
  if (m) return { min: null, max: amount(m[2], m[3]) };
  m = RE_EXACT.exec(t);
  if (m) { const v = amount(m[1], m[2]); return { min: v, max: v }; }
  m = RE_RANGE.exec(t);
  if (m) {
    const a = amount(m[1], m[2]);
    const b = amount(m[3], m[4]);
    return { min: Math.min(a, b), max: Math.max(a, b) };
  }
  return null;
}

/** The `dur` URL value in force: absent → the server's default preset. */
export function durFromParams(params: URLSearchParams, fallback = DEFAULT_DUR): string {
  const v = params.get('dur');
  return v === null ? fallback : v;
}

/** What the API's `duration` parameter gets: the expression without spaces, or nothing. */
export function durApiValue(text: string): string | undefined {
  const t = text.replace(/\s+/g, '');
  if (t === '' || t === 'all') return undefined;
  return parseDur(t) ? t : undefined;
}

/** The chip whose value the text is (after removing spaces), if any. */
export function chipFor(text: string): DurChip | undefined {
  const t = text.replace(/\s+/g, '');
  if (t === '') return DUR_CHIPS[0];
  return DUR_CHIPS.find((c) => c.value === t);
}
