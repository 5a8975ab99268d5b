// The width of an element, kept up to date as it resizes (charts draw to it).
import { useLayoutEffect, useState } from 'preact/hooks';

/** ref's clientWidth (`fallback` before it is laid out, or when it is 0). */
export function useWidth(ref: { current: HTMLElement | null }, fallback = 0): number {
  const [w, setW] = useState(fallback);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setW(el.clientWidth || fallback));
    ro.observe(el);
    setW(el.clientWidth || fallback);
    return () => ro.disconnect();
  }, []);
  return w;
}
