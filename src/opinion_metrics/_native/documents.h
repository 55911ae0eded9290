/* What document_edges (documents.c) and the keeping of a document's keywords
 * (normalization.c) share: the normalization, the kept keywords, the arena their forms are
 * written to and the set that finds a form among them. */
#ifndef OPINION_METRICS_NATIVE_DOCUMENTS_H
#define OPINION_METRICS_NATIVE_DOCUMENTS_H

#include "common.h"

#define DELETED 0xFF /* a byte's replacement in a normalization table: none */

/* A built-in normalization of ASCII text: each byte replaced (`map`: lower case, punctuation
 * mapped or DELETED), then white space (`space`: str.split's) collapsed to single spaces and
 * stripped (`collapse` 1), or only stripped (0). */
typedef struct {
    const uint8_t *map, *space;
    int collapse;
    uint8_t keep[128], gap[128]; /* per byte: kept as a character; replaced by white space */
    uint8_t same[256];           /* per byte: 1 left as it is (and not white space, collapsing); 2 a
                                  * space left as it is, collapsing; 0 otherwise */
    int letters, lower;          /* letters_and_spaces applies; it lower-cases letters */
} Normalization;

/* A kept keyword of a document: its form and its token form (in the keyword's own UTF-8
 * bytes where normalizing changes nothing, else in the arena). */
typedef struct {
    const char *form, *token;
    Py_ssize_t form_size, token_size;
    uint64_t hash, bits; /* bits: byte_bits of the form compared (the token form under "token") */
} Keyword;

/* The bytes the forms of a document are written to: blocks that never move (a keyword's
 * form stays where it was written), reused from one document to the next. */
typedef struct {
    char **blocks;
    Py_ssize_t *capacity, count, current, used;
} Arena;

/* Asks the processor to fetch an object's memory ahead of its use (where the compiler can). */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

/* A set of keyword numbers by their forms' hashes, emptied in O(1) (slots stamped). */
typedef struct {
    int32_t *number;
    uint32_t *stamp;
    size_t mask;
    uint32_t now;
} KeywordSet;

/* The number of the keyword in the set whose form equals `kw`'s, or -1 (then `kw` is added as
 * `number` if number >= 0). */
static inline int32_t
set_find(KeywordSet *s, const Keyword *keywords, const Keyword *kw, int32_t number)
{
    for (size_t slot = (size_t)kw->hash & s->mask;; slot = (slot + 1) & s->mask) {
        if (s->stamp[slot] != s->now) {
            if (number >= 0) {
                s->stamp[slot] = s->now;
                s->number[slot] = number;
            }
            return -1;
        }
        const Keyword *other = &keywords[s->number[slot]];
        if (other->hash == kw->hash && other->form_size == kw->form_size &&
            memcmp(other->form, kw->form, (size_t)kw->form_size) == 0)
            return s->number[slot];
    }
}

/* normalization.c: the normalization of document_edges's tables, a row's keywords kept (each
 * function's contract is at its definition), bytes of the arena, and the arena emptied for the
 * next document (its blocks kept) or freed. */
OM_SHARED int om_normalization(Normalization *norm, const Py_buffer *table, const Py_buffer *spaces, int collapse);
OM_SHARED Py_ssize_t om_keep_row(PyObject *row, Arena *a, const Normalization *norm, int match, PyObject *known,
                                 PyObject *missing, KeywordSet *seen, Keyword *kept, int *plain);
OM_SHARED char *om_arena_bytes(Arena *a, Py_ssize_t size);
OM_SHARED void om_arena_rewind(Arena *a);
OM_SHARED void om_arena_free(Arena *a);

#endif
