import { describe, expect, it } from 'vitest';
import { abbreviatePackage, jarName, parseMethod, stackLine } from './methodname';

describe('parseMethod', () => {
  it('splits a full dictionary word', () => {
    const m = parseMethod('org.springframework.http.ResponseEntity com.example.orders.web.TicketController3.processTicket(java.lang.String,int) (TicketController3.java:58) [app.jar]');
    expect(m.ok).toBe(true);
    expect(m.ret).toBe('org.springframework.http.ResponseEntity');
    expect(m.pkg).toBe('com.example.orders.web');
    expect(m.cls).toBe('TicketController3');
    expect(m.method).toBe('processTicket');
    expect(m.label).toBe('TicketController3.processTicket(String, int)');
    expect(m.file).toBe('TicketController3.java');
    expect(m.line).toBe(58);
    expect(m.jar).toBe('app.jar');
    expect(m.fqn).toBe('com.example.orders.web.TicketController3.processTicket');
    expect(abbreviatePackage(m.pkg)).toBe('c.e.o.w');
  });

  it('strips CGLIB markers and handles generated sources and fat jars', () => {
    const m = parseMethod('void com.a.OrderService$$EnhancerBySpringCGLIB$$3f2a.save() (<generated>) [/opt/app.jar!/BOOT-INF/classes]');
    expect(m.cls).toBe('OrderService');
    expect(m.label).toBe('OrderService.save()');
    expect(m.file).toBe('<generated>');
    expect(m.jar).toBe('app.jar');
    expect(jarName('app.jar!/BOOT-INF/lib/hikari-5.0.jar!/')).toBe('hikari-5.0.jar');
  });

  it('parses words without return type, source or jar', () => {
    const m = parseMethod('com.a.B.c()');
    expect(m.ok).toBe(true);
    expect(m.label).toBe('B.c()');
    expect(m.ret).toBe('');
  });

  it('keeps unparsable words as-is', () => {
    for (const w of ['3 calls', 'garbage', '', 'a b c d(']) {
      const m = parseMethod(w);
      expect(m.ok).toBe(false);
      expect(m.label).toBe(w);
    }
  });

  it('renders stack-trace lines', () => {
    expect(stackLine(parseMethod('void x.Root.run() (Root.java:5) [a.jar]'))).toBe('at x.Root.run(Root.java:5) [a.jar] (no args)');
    expect(stackLine(parseMethod('int x.A.f(long) (A.java:7) [a.jar]'))).toBe('at x.A.f(A.java:7) [a.jar] (long) : int');
  });
});
