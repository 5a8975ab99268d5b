// title.test.ts -- ui.md §3.3 rules 1, 2 and 4.
import { describe, expect, it } from 'vitest';
import { callTitle, shortMethod, traceIds, traceLink, urlPath } from './title';

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
  it('rule 3: JMS, Quartz and queue listeners', () => {
    const jms = 'void com.acme.OrderListener.onMessage(javax.jms.Message) (OrderListener.java:12) [app.jar]';
    expect(callTitle({ method: jms, params: {} }).text).toBe('JMS: OrderListener');
    expect(callTitle({ method: jms, params: { 'jms.destination': ['queue://ORDERS'], 'jms.text': ['x'.repeat(70)] } }).text)
      .toBe(`JMS: OrderListener queue://ORDERS “${'x'.repeat(60)}…”`);
    const q = 'void com.acme.jobs.Cleanup.execute(org.quartz.JobExecutionContext) (Cleanup.java:5) [app.jar]';
    expect(callTitle({ method: q, params: {} }).text).toBe('Cleanup quartz job');
    expect(callTitle({ method: q, params: { 'quartz.job': ['nightly'], 'quartz.job.type': ['Cron'] } }).text).toBe('Cron quartz job nightly');
    expect(callTitle({ method: SIG, params: { queue: ['billing'] } }).text).toBe('InvoiceController0.processInvoice on queue billing');
    // an onMessage of something else is not JMS
    expect(callTitle({ method: 'void a.B.onMessage(java.lang.String)', params: {} }).text).toBe('B.onMessage');
  });
  it('trace ids for the ids chip', () => {
    expect(traceIds({ params: { 'x-request-id': ['r1'], 'brave.trace_id': ['t1', 't1'], other: ['o'] } }))
      .toEqual([['brave.trace_id', 't1'], ['x-request-id', 'r1']]);
  });
  it('links an id through the --trace-link template (MAY), and only an http(s) one', () => {
    expect(traceLink('https://jaeger.example/trace/{id}', 'brave.trace_id', 'ab12')).toBe('https://jaeger.example/trace/ab12');
    expect(traceLink('http://logs.example/?q={name}%3D{id}&id={id}', 'x-request-id', 'a b/c'))
      .toBe('http://logs.example/?q=x-request-id%3Da%20b%2Fc&id=a%20b%2Fc');
    expect(traceLink(null, 'x', 'y')).toBeNull();
    expect(traceLink('javascript:alert(1)//{id}', 'x', 'y')).toBeNull();
    expect(traceLink('https://no.placeholder/', 'x', 'y')).toBeNull();
  });
});
