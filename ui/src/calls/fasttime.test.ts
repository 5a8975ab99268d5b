// fasttime.test.ts -- listTs gives the same text as lib/time fmtListTs, DST edges included.
import { describe, expect, it } from 'vitest';
import { fmtListTs } from '../lib/time';
import { listTs } from './fasttime';

const ZONES = ['UTC', 'Asia/Kolkata', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'Pacific/Chatham'];
// around the 2024 US and EU transitions, and the §1.3 vector
const INSTANTS = [1700000000000, Date.UTC(2024, 2, 10, 6, 59, 59, 999), Date.UTC(2024, 2, 10, 7, 0, 0, 1),
  Date.UTC(2024, 10, 3, 5, 59, 59, 500), Date.UTC(2024, 10, 3, 6, 0, 0, 250), Date.UTC(2024, 2, 31, 0, 59, 59, 999),
  Date.UTC(2024, 2, 31, 1, 0, 0, 0), Date.UTC(2024, 3, 6, 15, 0, 0, 0), Date.UTC(2024, 3, 6, 14, 59, 59, 999)];

describe('listTs', () => {
  it('matches fmtListTs', () => {
    for (const z of ZONES) {
      for (const t of INSTANTS) {
        for (const now of [t + 1000, t + 3600000 * 20, t + 86400000 * 3]) {
          expect(listTs(t, z, now)).toBe(fmtListTs(t, z, now));
        }
      }
    }
  });
  it('matches over a day of random instants', () => {
    const base = Date.UTC(2024, 10, 2, 12);
    for (let i = 0; i < 2000; i++) {
      const t = base + Math.floor(Math.random() * 86400000 * 2);
      for (const z of ['America/New_York', 'Asia/Kolkata']) expect(listTs(t, z, base + 86400000)).toBe(fmtListTs(t, z, base + 86400000));
    }
  });
});
