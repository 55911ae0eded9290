/* What the C files of the helper share: they compile to one extension module,
 * opinion_metrics._native._speedups, on Python 3.11's limited API (module.c lists which file
 * holds which function). Each file includes this header first.
 *
 * om_: a function (or variable) one file defines and others call, declared here; hidden, so
 * that the module exports only its PyInit. The static inline helpers below are compiled into
 * each file that calls them, as when the helper was one file (the hot ones, add_row and
 * related_strings, stay inlined in their loops). */
#ifndef OPINION_METRICS_NATIVE_COMMON_H
#define OPINION_METRICS_NATIVE_COMMON_H

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000 /* the stable ABI of Python 3.11: one abi3 wheel per platform */
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define OM_SHARED __attribute__((visibility("hidden")))
#else
#define OM_SHARED
#endif

/* The limited API's calls for PySequence_Fast_GET_SIZE / _ITEMS: the size of an exact list
 * or tuple, and the function that gives its item k (borrowed; NULL with IndexError when k is
 * past its end), looked up once per sequence and called per item. */
typedef PyObject *(*GetItem)(PyObject *, Py_ssize_t);

static inline Py_ssize_t
length_of(PyObject *sequence)
{
    return PyList_CheckExact(sequence) ? PyList_Size(sequence) : PyTuple_Size(sequence);
}

static inline GetItem
getter_of(PyObject *sequence)
{
    return PyList_CheckExact(sequence) ? PyList_GetItem : PyTuple_GetItem;
}

/* The tables of rows the edge functions return (edges.c, documents.c, containment.c). */

/* A growing table of int64 rows, `width` (2 or 3) columns, each its own array. */
typedef struct {
    int64_t *columns[3];
    int width;
    Py_ssize_t length, capacity;
} Rows;

/* Appends the row (a, b[, c]); 0 with MemoryError. */
static inline int
add_row(Rows *rows, int64_t a, int64_t b, int64_t c)
{
    if (rows->length == rows->capacity) {
        Py_ssize_t capacity = rows->capacity ? 2 * rows->capacity : 1024;
        for (int k = 0; k < rows->width; k++) {
            int64_t *grown = PyMem_Realloc(rows->columns[k], (size_t)capacity * sizeof(int64_t));
            if (grown == NULL) {
                PyErr_NoMemory();
                return 0;
            }
            rows->columns[k] = grown;
        }
        rows->capacity = capacity;
    }
    int64_t values[3] = {a, b, c};
    for (int k = 0; k < rows->width; k++)
        rows->columns[k][rows->length] = values[k];
    rows->length++;
    return 1;
}

/* common.c: the columns as a tuple of int64 bytearrays (writable), or NULL with an
 * exception; the columns freed. */
OM_SHARED PyObject *om_rows_as_columns(const Rows *rows);
OM_SHARED void om_free_rows(Rows *rows);

/* The relation on strings of pair_edges (edges.c) and document_edges (documents.c), and the
 * canonical token forms they compare under "token". */

/* Whether `needle` (nn bytes) occurs in `haystack` (hn bytes); with `tokens`, only
 * where it starts and ends at a token boundary (a space or an end of a canonical token form). */
static inline int
occurs_in(const char *haystack, Py_ssize_t hn, const char *needle, Py_ssize_t nn, int tokens)
{
    if (nn == 0) /* no bytes, or no tokens (a keyword of white space): in every string */
        return 1;
    if (nn > hn)
        return 0;
    const char *last = haystack + (hn - nn); /* the last start */
    for (const char *at = haystack; at <= last; at++) {
        at = memchr(at, needle[0], (size_t)(last - at) + 1);
        if (at == NULL)
            return 0;
        if (memcmp(at + 1, needle + 1, (size_t)nn - 1) == 0 &&
            (!tokens || ((at == haystack || at[-1] == ' ') && (at == last || at[nn] == ' '))))
            return 1;
    }
    return 0;
}

/* Whether two non-empty strings are related: equal, or the shorter in the longer (as tokens:
 * both canonical token forms, tokens separated by one space). */
static inline int
related_strings(const char *a, Py_ssize_t an, const char *b, Py_ssize_t bn, int tokens)
{
    if (an == bn)
        return memcmp(a, b, (size_t)an) == 0;
    return an < bn ? occurs_in(b, bn, a, an, tokens) : occurs_in(a, an, b, bn, tokens);
}

/* The bytes str.split() separates at among ASCII: \t \n \v \f \r \x1c-\x1f and space. */
static inline int
ascii_space(uint8_t byte)
{
    return byte == ' ' || (byte >= '\t' && byte <= '\r') || (byte >= 0x1c && byte <= 0x1f);
}

/* Whether UTF-8 bytes are a canonical token form: ASCII, tokens separated by one space, no
 * other white space, none at the ends (" ".join(s.split()) == s). */
static inline int
canonical_tokens(const char *data, Py_ssize_t size)
{
    if (size > 0 && (data[0] == ' ' || data[size - 1] == ' '))
        return 0;
    for (Py_ssize_t k = 0; k < size; k++) {
        uint8_t byte = (uint8_t)data[k];
        if (byte >= 0x80 || (byte != ' ' && ascii_space(byte)) || (byte == ' ' && data[k + 1] == ' '))
            return 0;
    }
    return 1;
}

/* The module's functions (its method table: module.c), by the file that holds them. */

/* interning.c */
OM_SHARED extern hashfunc om_str_hash;
OM_SHARED PyObject *om_distinct_codes(PyObject *module, PyObject *lists);
OM_SHARED PyObject *om_number_strings(PyObject *module, PyObject *args);
OM_SHARED PyObject *om_row_objects(PyObject *module, PyObject *lists);
OM_SHARED PyObject *om_encode_floats(PyObject *module, PyObject *lists);
/* edges.c */
OM_SHARED PyObject *om_first_occurrences(PyObject *module, PyObject *args);
OM_SHARED PyObject *om_exact_hits(PyObject *module, PyObject *args);
OM_SHARED PyObject *om_related_edges(PyObject *module, PyObject *args);
OM_SHARED PyObject *om_pair_edges(PyObject *module, PyObject *args);
/* documents.c */
OM_SHARED PyObject *om_document_edges(PyObject *module, PyObject *args);
/* containment.c (om_contained: contained_pairs on UTF-8 bytes, for document_edges) */
OM_SHARED PyObject *om_contained_pairs(PyObject *module, PyObject *args);
OM_SHARED int om_contained(const char *const *data, const Py_ssize_t *size, Py_ssize_t n, Py_ssize_t m,
                           Py_ssize_t block, int how, Rows *pairs, int *plain);
/* snapshot.c */
OM_SHARED PyObject *om_snapshot_rows(PyObject *module, PyObject *args);
OM_SHARED PyObject *om_rows_unchanged(PyObject *module, PyObject *args);
/* tuple_matching.c */
OM_SHARED PyObject *om_membership_hits(PyObject *module, PyObject *args);
OM_SHARED PyObject *om_exact_tuple_counts(PyObject *module, PyObject *args);
/* tuples.c */
OM_SHARED PyObject *om_tuple_codes(PyObject *module, PyObject *args);

#endif
