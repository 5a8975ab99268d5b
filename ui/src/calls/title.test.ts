// title.test.ts -- ui.md §3.3 rules 1, 2 and 4.
import { describe, expect, it } from 'vitest';
import { callTitle, shortMethod, urlPath } from './title';

const SIG = 'org.springframework.http.ResponseEntity com.example.billing.web.InvoiceController0.processInvoice() (InvoiceController0.java:442) [app.jar]';

describe('titles', () => {
  it('shortMethod hides the package', () => {
    expect(shortMethod(SIG)).toBe('InvoiceController0.processInvoice');
    expect(shortMethod('void com.acme.Jobs$Inner.run(int, java.lang.String)')).toBe('Jobs$Inner.run');
    expect(shortMethod('run')).toBe('run');
  });
  it('urlPath drops scheme and host', () => {
    expect(urlPath('http://x/api/orders?page=2')).toBe('/api/orders?page=2');
    expect(urlPath('https://h:8080')).toBe('/');
    expect(urlPath('/invoices')).toBe('/invoices');
  });
  it('rule 1: profiler.title wins', () => {
    expect(callTitle({ method: SIG, params: { 'profiler.title': ['GET /x'], 'web.url': ['/y'] } }).text).toBe('GET /x');
  });
  it('rule 2: web.url with method, query and clients', () => {
    expect(callTitle({ method: SIG, params: { 'web.url': ['http://h/a'], 'web.method': ['POST'], 'web.query': ['p=1'],
      'web.remote.addr': ['1.2.3.4', '1.2.3.4'] } }).text).toBe('POST /a?p=1, client: 1.2.3.4');
    expect(callTitle({ method: SIG, params: { 'web.url': ['/a', '/b'] } }).text).toBe('2 pages: /a, /b');
  });
  it('rule 4: Class.method and params', () => {
    const t = callTitle({ method: SIG, params: { 'job.name': ['nightly'], 'call.red': ['x'], _hidden: ['y'], 'request.id': ['r1'] } });
    expect(t.text).toBe('InvoiceController0.processInvoice job.name: nightly; request.id: r1');
    expect(t.tooltip).toBe(SIG);
    expect(callTitle({ method: '#42', params: {} }).text).toBe('#42');
  });
});
