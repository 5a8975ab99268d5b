/* tree_sql.c -- the SQL signature of ui.md §4.1: what is left of a statement once its
 * literals, numbers and names are reduced to their shape, so that the same query with
 * different constants falls into one group of the call tree. */
#include "cp_tree.h"

/* Bytes of a word: ASCII letters, digits and underscore, and every byte of a non-ASCII
 * UTF-8 sequence (identifiers and literals may be in any script; cutting a sequence in
 * the middle would leave invalid UTF-8 in the signature). */
static int is_word_byte(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Bytes of the UTF-8 sequence starting at s[i] (1 for ASCII or a stray byte). */
static size_t seq_len(const uint8_t *s, size_t i, size_t n)
{
    size_t k = 1;
    if (s[i] >= 0xC0)
        while (i + k < n && k < 4 && (s[i + k] & 0xC0) == 0x80) k++;
    return k;
}

/* The steps of the spec (commas, then literals, then digits, then words, then
 * whitespace) are applied in one pass. That is equivalent because no later step can
 * create what an earlier one removes, and the only interaction -- a removal joining two
 * words into one, as in "a,b" or "x'lit'y" -- is handled by remembering that we are
 * inside a word across the removed bytes. Whitespace is a separator that is itself
 * dropped, so "a b" stays two words. */
int cp_sql_signature(const char *str, size_t n, cp_buf *out)
{
    const uint8_t *s = (const uint8_t *)str;
    int in_word = 0;
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c == ',' || (c >= '0' && c <= '9')) { /* removed; does not end a word */
            i++;
            continue;
        }
        if (c == '\'') { /* a literal, '' inside it included; unterminated runs to the end */
            i++;
            while (i < n) {
                if (s[i] == '\'' && i + 1 < n && s[i + 1] == '\'') i += 2;
                else if (s[i++] == '\'') break;
            }
            continue;
        }
        if (is_word_byte(c)) {
            size_t k = seq_len(s, i, n);
            if (!in_word && cp_buf_append(out, s + i, k) != CP_OK) return CP_ENOMEM;
            in_word = 1;
            i += k;
            continue;
        }
        in_word = 0;
        if (!is_space(c) && cp_buf_putc(out, c) != CP_OK) return CP_ENOMEM;
        i++;
    }
    return CP_OK;
}
