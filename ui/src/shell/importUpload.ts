// importUpload.ts -- sends a trace file to POST /api/v1/import with XMLHttpRequest (fetch
// reports no upload progress). The file is the raw body; a gzip file goes as it is with
// Content-Encoding: gzip (the server unzips it). Every end -- the answer, a network
// failure, an abort -- arrives through the callbacks, never as a thrown error.

import { apiUrl } from '../lib/api';
import { isGzip, parseImportAnswer, type ImportOutcome } from './importModel';

export interface UploadCallbacks {
  /** bytes of the body sent so far; total null when the browser does not know it */
  onProgress: (loaded: number, total: number | null) => void;
  /** the whole body is sent: the server imports it and answers when done */
  onSent: () => void;
  onDone: (o: ImportOutcome) => void;
  onFailed: (message: string) => void;
  onAborted: () => void;
}

export interface Upload { abort: () => void }

async function gzipped(file: Blob): Promise<boolean> {
  try {
    return isGzip(new Uint8Array(await file.slice(0, 2).arrayBuffer()));
  } catch {
    return false;
  }
}

export function uploadImport(file: Blob, query: Record<string, string>, cb: UploadCallbacks): Upload {
  const xhr = new XMLHttpRequest();
  let aborted = false;
  let started = false;
  void gzipped(file).then((gz) => {
    if (aborted) return;
    xhr.open('POST', apiUrl('/import', query));
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    if (gz) xhr.setRequestHeader('Content-Encoding', 'gzip');
    xhr.upload.onprogress = (e) => cb.onProgress(e.loaded, e.lengthComputable ? e.total : null);
    xhr.upload.onload = () => cb.onSent();
    xhr.onload = () => cb.onDone(parseImportAnswer(xhr.status, xhr.responseText));
    xhr.onerror = () => cb.onFailed('the server cannot be reached, or it closed the connection during the upload');
    xhr.ontimeout = () => cb.onFailed('the server did not answer in time');
    xhr.onabort = () => cb.onAborted();
    started = true;
    xhr.send(file);
  });
  return {
    abort: () => {
      if (aborted) return;
      aborted = true;
      if (started) xhr.abort();
      else cb.onAborted();
    },
  };
}
