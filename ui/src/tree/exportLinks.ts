// exportLinks.ts -- the Export menu of the tree page: the page's calls as a TPTP trace
// file (GET /calls/{id}/export for one call, GET /tree/export?ids= for several: the ids
// the page fetched its tree with).

import { apiUrl } from '../lib/api';

export type ExportFormat = 'trcbin' | 'trcxml';

export const EXPORT_FORMATS: { format: ExportFormat; label: string }[] = [
  { format: 'trcbin', label: 'TPTP binary (.trcbin)' },
  { format: 'trcxml', label: 'TPTP XML (.trcxml)' },
];

/** The download URL of the calls as one TPTP file; null without a call. */
export function exportHref(ids: string[], format: ExportFormat): string | null {
  if (ids.length === 0) return null;
  if (ids.length === 1) return apiUrl(`/calls/${encodeURIComponent(ids[0])}/export`, { format });
  return apiUrl('/tree/export', { ids: ids.join(','), format });
}
