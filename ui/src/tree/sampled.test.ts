import { describe, expect, it } from 'vitest';
import { sampledSource, sampledUrl, tdFrameMethod } from './sampled';
import { MethodNames } from './methodname';

describe('sampled trees (§9.4, §10.7)', () => {
  it('td frames become parsable methods', () => {
    expect(tdFrameMethod('sun.nio.ch.NioSocketImpl.park(java.base@17.0.7/NioSocketImpl.java:181)')).toBe('sun.nio.ch.NioSocketImpl.park() (NioSocketImpl.java:181)');
    expect(tdFrameMethod('sun.nio.ch.Net.poll(java.base@17.0.7/Native Method)')).toBe('sun.nio.ch.Net.poll() (Native Method)');
    expect(tdFrameMethod('java.lang.Thread.run(Thread.java:833)')).toBe('java.lang.Thread.run() (Thread.java:833)');
    expect(tdFrameMethod('<no Java frames>')).toBe('<no Java frames>');
    const n = new MethodNames([tdFrameMethod('sun.nio.ch.NioSocketImpl.park(java.base@17.0.7/NioSocketImpl.java:181)')]).get(0);
    expect(n.ok).toBe(true);
    expect(n.cls).toBe('NioSocketImpl');
    expect(n.pkg).toBe('sun.nio.ch');
  });
  it('the URL names the source', () => {
    const s = sampledSource(new URLSearchParams('td=1&namespace=ns&pod=p1&from=1&to=2&idle=1'))!;
    expect(sampledUrl(s)).toBe('/api/v1/dumps/threads-profile?namespace=ns&pod=p1&from=1&to=2&idle=1');
    expect(sampledSource(new URLSearchParams('td=1'))!.error).toMatch(/No pod/);
    expect(sampledUrl(sampledSource(new URLSearchParams('pprof=42&sample_type=cpu'))!)).toBe('/api/v1/dumps/42/profile/tree?sample_type=cpu');
    expect(sampledSource(new URLSearchParams('call=x'))).toBeNull();
  });
});
