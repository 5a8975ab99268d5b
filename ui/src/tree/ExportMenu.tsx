// ExportMenu.tsx -- "Export ▾" in the tree page's toolbar: the calls of the page as a TPTP
// trace file (binary or XML) that other profilers read; plain download links.

import { useEffect, useRef, useState } from 'preact/hooks';
import { EXPORT_FORMATS, exportHref } from './exportLinks';
import './export.css';

export function ExportMenu({ ids }: { ids: string[] }) {
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLSpanElement>(null);

  useEffect(() => {
    if (!open) return;
    const onDoc = (e: MouseEvent) => { if (box.current && !box.current.contains(e.target as Node)) setOpen(false); };
    const onKey = (e: KeyboardEvent) => { if (e.key === 'Escape') setOpen(false); };
    document.addEventListener('mousedown', onDoc);
    document.addEventListener('keydown', onKey);
    return () => { document.removeEventListener('mousedown', onDoc); document.removeEventListener('keydown', onKey); };
  }, [open]);

  const what = ids.length === 1 ? 'this call' : `these ${ids.length} calls`;
  return (
    <span class="tp-export" ref={box}>
      <button type="button" class={`btn btn-small ${open ? 'btn-on' : ''}`} data-testid="tree-export" aria-haspopup="menu"
        aria-expanded={open} title={`Download ${what} as a TPTP trace file`} onClick={() => setOpen(!open)}>Export ▾</button>
      {open && (
        <div class="popover tp-menu tp-export-pop" role="menu" data-testid="tree-export-menu">
          <div class="head">Download {what} as</div>
          {EXPORT_FORMATS.map(({ format, label }) => (
            <a key={format} role="menuitem" href={exportHref(ids, format) ?? undefined} download data-testid={`tree-export-${format}`}
              onClick={() => setOpen(false)}>{label}</a>
          ))}
        </div>
      )}
    </span>
  );
}
