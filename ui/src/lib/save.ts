// save.ts -- hands a text made in the page to the browser as a download (exports, the
// standalone tree page).

export function saveText(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  // the download has started reading the blob by then; revoking at once can cut it
  setTimeout(() => URL.revokeObjectURL(url), 30000);
}
