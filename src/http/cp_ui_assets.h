/* cp_ui_assets.h -- the web UI's files (ui/dist) compiled into the binary.
 *
 * The table is generated at build time by tools/embed_ui.c (CMake target cp_embed_ui)
 * into <build>/generated/ui_assets.c, which belongs to the cp_http library. It is sorted
 * by path (strcmp order) so lookups can bsearch it. When the UI was not built (no
 * ui/dist/index.html) the table is empty: cp_ui_asset_count is 0 and src/http/ui.c
 * answers the UI's pages with a 503 that says how to build it.
 */
#ifndef CP_UI_ASSETS_H
#define CP_UI_ASSETS_H

#include <stddef.h>

typedef struct cp_ui_asset {
    const char *path;          /* URL path: "/index.html", "/assets/index-abc.js" */
    const char *content_type;  /* e.g. "text/javascript; charset=utf-8" */
    const unsigned char *data; /* the file's bytes */
    size_t len;
    const unsigned char *gz;   /* gzip variant, NULL if not worth it (saves <= 10 %) */
    size_t gz_len;
    const char *etag;          /* quoted hex hash of data: "\"0123...\"" */
} cp_ui_asset;

extern const cp_ui_asset cp_ui_assets[];
extern const size_t cp_ui_asset_count;

#endif
