// ImportDialog.tsx -- "Import trace" (POST /api/v1/import): pick or drop a foreign trace
// file (TPTP .trcbin / .trcxml, CBOR raw trace, gzipped or not), optionally name its
// namespace / service / pod, upload it with a progress bar and Cancel, read the server's
// report, and open the calls list on exactly the imported calls. Every failure is shown
// in the dialog. useFileDrag() lets the shell take a file dropped anywhere on the page.

import { useEffect, useRef, useState } from 'preact/hooks';
import { useApp } from '../lib/ctx';
import { fmtBytes, fmtCount } from '../lib/format';
import { spanText } from './importModel';
import { navigate } from '../lib/url';
import { Dialog } from '../tree/dialogs';
import {
  callsUrlForReport, formatName, headline, identityText, IMPORT_FORMATS, importQuery, nameProblem, progressPercent,
  progressText, type ImportFields, type ImportOutcome, type ImportReport,
} from './importModel';
import { uploadImport, type Upload } from './importUpload';
import './import.css';

export interface DroppedFile { file: File; seq: number }

/** Whether files are being dragged over the page; a file dropped anywhere goes to onFile
 *  (the browser would otherwise open it in place of the app). */
export function useFileDrag(onFile: (f: File) => void): boolean {
  const [dragging, setDragging] = useState(false);
  const cb = useRef(onFile);
  cb.current = onFile;
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hasFiles = (e: DragEvent) => !!e.dataTransfer && Array.from(e.dataTransfer.types).includes('Files');
    const over = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer!.dropEffect = 'copy';
      setDragging(true);
      // dragover repeats while the pointer is over the page: its silence means it left
      clearTimeout(timer);
      timer = setTimeout(() => setDragging(false), 300);
    };
    const drop = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      clearTimeout(timer);
      setDragging(false);
      const f = e.dataTransfer?.files?.[0];
      if (f) cb.current(f);
    };
    window.addEventListener('dragover', over);
    window.addEventListener('drop', drop);
    return () => {
      clearTimeout(timer);
      window.removeEventListener('dragover', over);
      window.removeEventListener('drop', drop);
    };
  }, []);
  return dragging;
}

type Banner = { tone: 'red' | 'info'; text: string };
type Phase =
  | { kind: 'form'; banner?: Banner }
  | { kind: 'sending'; loaded: number; total: number | null; sent: boolean }
  | { kind: 'done'; outcome: ImportOutcome; bytes: number; ms: number };

const NO_FIELDS: ImportFields = { namespace: '', service: '', pod: '', format: '' };

export function ImportDialog({ dropped, dragging, onClose, onImported }: {
  dropped: DroppedFile | null;
  dragging: boolean;
  onClose: () => void;
  /** the server stored new calls: the shell reloads its data */
  onImported: () => void;
}) {
  const app = useApp();
  const [file, setFile] = useState<File | null>(dropped?.file ?? null);
  const [fields, setFields] = useState<ImportFields>(NO_FIELDS);
  const [phase, setPhase] = useState<Phase>({ kind: 'form' });
  const upload = useRef<Upload | null>(null);
  const sending = phase.kind === 'sending';

  // a file dropped on the page while the dialog is open replaces the chosen one
  useEffect(() => {
    if (dropped && !sending) { setFile(dropped.file); setPhase({ kind: 'form' }); }
  }, [dropped?.seq]);
  // closing the dialog (or leaving the page) stops an upload that still runs
  useEffect(() => () => upload.current?.abort(), []);

  const problems = {
    namespace: nameProblem(fields.namespace), service: nameProblem(fields.service), pod: nameProblem(fields.pod),
  };
  const valid = !problems.namespace && !problems.service && !problems.pod;

  const start = () => {
    if (!file || !valid || sending) return;
    const t0 = performance.now();
    setPhase({ kind: 'sending', loaded: 0, total: file.size, sent: false });
    // the file's name goes into the audit log (servers that keep one accept `name`)
    const query = app.config?.features?.audit === true ? { ...importQuery(fields), name: file.name.slice(0, 255) } : importQuery(fields);
    upload.current = uploadImport(file, query, {
      onProgress: (loaded, total) => setPhase((p) => (p.kind === 'sending' ? { ...p, loaded, total: total ?? p.total } : p)),
      onSent: () => setPhase((p) => (p.kind === 'sending' ? { ...p, loaded: p.total ?? p.loaded, sent: true } : p)),
      onDone: (outcome) => {
        upload.current = null;
        setPhase({ kind: 'done', outcome, bytes: file.size, ms: performance.now() - t0 });
        if ((outcome.report?.calls ?? 0) > 0) onImported();
      },
      onFailed: (message) => {
        upload.current = null;
        setPhase({ kind: 'form', banner: { tone: 'red', text: `The upload failed: ${message}.` } });
      },
      onAborted: () => {
        upload.current = null;
        setPhase((p) => ({
          kind: 'form',
          banner: {
            tone: 'info',
            text: `Upload cancelled${p.kind === 'sending' && p.total ? ` at ${progressPercent(p.loaded, p.total)} %` : ''}. ` +
              'Calls the server had already imported stay.',
          },
        }));
      },
    });
  };

  const cancel = () => upload.current?.abort();
  // Esc and a click beside the dialog close it, except while a file is sent: only Cancel stops that
  const requestClose = () => { if (!sending) onClose(); };
  const openUrl = phase.kind === 'done' && phase.outcome.report
    ? callsUrlForReport(phase.outcome.report, app.config?.limits?.max_span_ms ?? 0) : null;

  let buttons;
  if (phase.kind === 'sending') {
    buttons = <button type="button" class="btn" data-testid="import-cancel" onClick={cancel}>Cancel</button>;
  } else if (phase.kind === 'done') {
    buttons = (
      <>
        {openUrl && (
          <a class="btn btn-primary" href={openUrl} data-testid="import-open-calls"
            onClick={(e) => { e.preventDefault(); navigate(openUrl); onClose(); }}>Open the imported calls</a>
        )}
        <button type="button" class="btn" data-testid="import-again"
          onClick={() => { setFile(null); setPhase({ kind: 'form' }); }}>Import another file</button>
        <button type="button" class="btn" data-testid="import-close" onClick={onClose}>Close</button>
      </>
    );
  } else {
    buttons = (
      <>
        <button type="button" class="btn btn-primary" data-testid="import-start" disabled={!file || !valid} onClick={start}>Import</button>
        <button type="button" class="btn" data-testid="import-close" onClick={onClose}>Close</button>
      </>
    );
  }

  const field = (k: 'namespace' | 'service' | 'pod', label: string) => (
    <label class="imp-field">
      <span>{label}</span>
      <input class={`input ${problems[k] ? 'invalid' : ''}`} data-testid={`import-${k}`} value={fields[k]} spellcheck={false}
        placeholder="from the file" disabled={sending}
        onInput={(e) => setFields({ ...fields, [k]: (e.currentTarget as HTMLInputElement).value })} />
      {problems[k] && <span class="error-text small">{problems[k]}</span>}
    </label>
  );

  return (
    <Dialog title="Import a trace file" testid="import-dialog" onClose={requestClose} buttons={buttons}>
      <div class="imp-body">
        {phase.kind !== 'done' && (
          <>
            <div class={`imp-drop ${dragging && !sending ? 'imp-drop-on' : ''} ${file ? 'imp-drop-full' : ''}`} data-testid="import-drop">
              {file
                ? <div class="imp-file" data-testid="import-file-name"><b>{file.name}</b> <span class="muted">{fmtBytes(file.size)}</span></div>
                : <div>Drop a trace file here</div>}
              <div class="muted small">TPTP binary (.trcbin) or XML (.trcxml), CBOR raw trace (.cbor); gzipped too; the format is detected from the content</div>
              {!sending && (
                <label class="btn imp-choose">
                  {file ? 'Choose another file…' : 'Choose a file…'}
                  <input type="file" class="imp-file-input" data-testid="import-file" accept=".trcbin,.trcxml,.cbor,.gz"
                    onChange={(e) => {
                      const input = e.currentTarget as HTMLInputElement;
                      const f = input.files?.[0];
                      if (f) { setFile(f); setPhase({ kind: 'form' }); }
                    }} />
                </label>
              )}
            </div>
            <div class="imp-fields">
              {field('namespace', 'Namespace')}
              {field('service', 'Service')}
              {field('pod', 'Pod')}
              <label class="imp-field">
                <span>Format</span>
                <select class="input" data-testid="import-format" value={fields.format} disabled={sending}
                  onChange={(e) => setFields({ ...fields, format: (e.currentTarget as HTMLSelectElement).value })}>
                  {IMPORT_FORMATS.map(([v, l]) => <option key={v} value={v}>{l}</option>)}
                </select>
              </label>
            </div>
            <div class="muted small">Empty fields are taken from the file (TPTP: the agent's host and process). A file imported again adds only the calls it did not add before.</div>
          </>
        )}
        {phase.kind === 'form' && phase.banner && (
          <div class={`banner banner-${phase.banner.tone}`} data-testid="import-error">{phase.banner.text}</div>
        )}
        {phase.kind === 'sending' && (
          <Progress loaded={phase.loaded} total={phase.total} sent={phase.sent} />
        )}
        {phase.kind === 'done' && (
          <>
            <Progress loaded={phase.bytes} total={phase.bytes} sent done ms={phase.ms} name={file?.name} />
            <ReportView outcome={phase.outcome} zone={app.zone} />
          </>
        )}
      </div>
    </Dialog>
  );
}

function Progress({ loaded, total, sent, done, ms, name }: {
  loaded: number; total: number | null; sent: boolean; done?: boolean; ms?: number; name?: string;
}) {
  const pct = sent ? 100 : progressPercent(loaded, total);
  return (
    <div class="imp-progress" data-testid="import-progress" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct}>
      <div class="imp-bar"><div class="imp-bar-fill" style={{ width: `${pct}%` }} /></div>
      <div class="imp-progress-text small">
        <span>{progressText(sent && total ? total : loaded, total)}</span>
        {done
          ? <span class="muted">{name ? `${name} ` : ''}sent and imported in {ms !== undefined ? `${(ms / 1000).toFixed(1)} s` : '—'}</span>
          : sent ? <span class="muted"><span class="spinner" /> the server is importing the calls…</span> : <span class="muted">uploading…</span>}
      </div>
    </div>
  );
}

function ReportView({ outcome, zone }: { outcome: ImportOutcome; zone: string }) {
  const r = outcome.report;
  const tone = outcome.kind === 'ok' ? (r && r.calls > 0 ? 'imp-ok' : 'imp-warn') : outcome.kind === 'bad_input' ? 'imp-warn' : 'imp-bad';
  return (
    <div class="imp-report" data-testid="import-report" data-kind={outcome.kind} data-calls={r?.calls ?? 0}
      data-duplicates={r?.duplicates ?? 0}>
      <div class={`imp-headline ${tone}`} data-testid="import-headline">{headline(outcome)}</div>
      {outcome.kind === 'bad_input' && (
        <div class="banner banner-amber" data-testid="import-error">
          {outcome.error}. {keptText(outcome.report.calls)}
        </div>
      )}
      {outcome.kind === 'error' && (
        <div class="banner banner-red" data-testid="import-error">
          {outcome.status ? `${outcome.status}: ` : ''}{outcome.error}
          {outcome.code === 'unknown_format' ? ' — choose the format if the file is a trace nonetheless.' : ''}
        </div>
      )}
      {r && <ReportTable r={r} zone={zone} />}
    </div>
  );
}

function keptText(n: number): string {
  if (n === 0) return 'No call was complete before it.';
  return n === 1 ? 'The call read before it is kept.' : `The ${fmtCount(n)} calls read before it are kept.`;
}

function ReportTable({ r, zone }: { r: ImportReport; zone: string }) {
  const rows: [string, string, string?][] = [
    ['Format', formatName(r.format)],
    ['Calls', `${fmtCount(r.calls)} new`, 'Calls stored by this import'],
  ];
  if (r.duplicates) rows.push(['Duplicates', fmtCount(r.duplicates), 'Calls of the file that an earlier import stored already (not stored again)']);
  rows.push(['Threads', fmtCount(r.threads)], ['Methods', fmtCount(r.methods)],
    ['Skipped', fmtCount(r.skipped), 'Items of the file that made no call (unknown or unused messages)']);
  if (r.unknown_messages) rows.push(['Unknown messages', fmtCount(r.unknown_messages)]);
  if (r.too_large) rows.push(['Too large', fmtCount(r.too_large), 'Calls kept without their tree: the tree was too large']);
  if (r.incomplete) rows.push(['Incomplete', fmtCount(r.incomplete), 'Calls still open at the end of the file, closed there']);
  const id = identityText(r);
  if (id) rows.push(['Identity', id, 'namespace / service / pod']);
  if (r.first_ms !== null && r.last_ms !== null) rows.push(['Time span', spanText(r.first_ms, r.last_ms, zone), 'Start of the first call → end of the last one (display zone)']);
  rows.push(['Read', `${fmtBytes(r.stopped_at)} of ${fmtBytes(r.bytes)}`, 'Where decoding stopped, of the bytes received']);
  return (
    <table class="imp-table">
      <tbody>
        {rows.map(([k, v, tip]) => (
          <tr key={k} data-key={k.toLowerCase()}><th title={tip}>{k}</th><td>{v}</td></tr>
        ))}
      </tbody>
    </table>
  );
}
