/* document_edges: each document's keywords normalized and de-duplicated (normalization.c)
 * and related on their own, for opinion_metrics.core.documents.
 *
 * document_edges(predictions, references, table, spaces, collapse, match, known,
 *                per_byte=inf, fixed=inf)
 *     -> (prediction_sizes, gold_sizes, (examples, predictions, gold_positions)), missing or None
 *
 * each example on its own, with no vocabulary: its keywords normalized, empty and repeated
 * forms dropped, and every (prediction, gold keyword) pair of the kept ones related (match 0
 * exact, 1 substring, 2 token): tested pair by pair, or, for a document of p predictions and
 * g gold keywords whose compared forms hold b bytes, with p * g > per_byte * b + fixed (a long
 * one), found by two containment searches over its strings (containment.c); positions among
 * the kept keywords, sizes their counts (int64 bytes). ASCII keywords are normalized here: each byte replaced by table[byte] (255:
 * removed), then runs of `spaces` bytes made one space and stripped (collapse 1) or only
 * stripped (0). Others are looked up in `known` (a dict of exact str: (form, token form));
 * when some are not there, the list of those (`missing`) is returned instead, for Python to
 * normalize and call again. None unless both sides are lists or tuples of as many rows, each
 * a list or tuple of exact str without lone surrogates.
 */
#include "documents.h"

#include <stdlib.h> /* qsort */

/* Fetches ahead the rows of documents i + 2 and the first keywords of document i + 1. */
static void
prefetch_documents(PyObject *predictions, PyObject *references, Py_ssize_t i, Py_ssize_t n)
{
    for (int side = 0; side < 2; side++) {
        PyObject *rows = side ? references : predictions;
        GetItem row_of = getter_of(rows);
        if (i + 2 < n)
            PREFETCH(row_of(rows, i + 2));
        if (i + 1 < n) {
            PyObject *row = row_of(rows, i + 1);
            GetItem keyword_of = getter_of(row);
            for (Py_ssize_t k = 0; k < 4 && k < length_of(row); k++)
                PREFETCH(keyword_of(row, k));
        }
    }
}

/* Long documents are rare: their functions are kept out of the way of the loop over documents. */
#if defined(__GNUC__) || defined(__clang__)
#define RARE __attribute__((noinline, cold))
#else
#define RARE
#endif

/* The bytes of the kept keywords' compared forms (token forms under "token"). */
RARE static double
document_bytes(const Keyword *predicted, Py_ssize_t p_count, const Keyword *gold, Py_ssize_t g_count, int tokens)
{
    double bytes = 0;
    for (Py_ssize_t k = 0; k < p_count + g_count; k++) {
        const Keyword *kw = k < p_count ? &predicted[k] : &gold[k - p_count];
        bytes += (double)(tokens ? kw->token_size : kw->form_size);
    }
    return bytes;
}

static int
by_position(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The related pairs of document i's kept keywords by two containment searches (om_contained):
 * predictions in gold keywords, then gold keywords in predictions, a pair of equal forms found
 * by the first only; on the forms, or (`tokens`) the token forms with a space at each end
 * (written to the arena). The edges (i, j, g) added ordered by j, then g. 0 with an exception. */
RARE static int
search_document(Py_ssize_t i, const Keyword *predicted, Py_ssize_t p_count, const Keyword *gold, Py_ssize_t g_count,
                int tokens, Arena *arena, Rows *edges)
{
    int ok = 0, plain = 1;
    Py_ssize_t total = 2 * p_count + g_count; /* predictions, gold keywords, predictions again */
    const char **data = PyMem_Malloc((size_t)total * sizeof(char *));
    Py_ssize_t *size = PyMem_Malloc((size_t)total * sizeof(Py_ssize_t));
    int64_t *starts = PyMem_Calloc((size_t)p_count + 2, sizeof(int64_t)), *gold_of = NULL;
    Rows found[2] = {{{NULL, NULL, NULL}, 2, 0, 0}, {{NULL, NULL, NULL}, 2, 0, 0}};
    if (data == NULL || size == NULL || starts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < p_count + g_count; k++) {
        const Keyword *kw = k < p_count ? &predicted[k] : &gold[k - p_count];
        if (!tokens) {
            data[k] = kw->form;
            size[k] = kw->form_size;
            continue;
        }
        char *padded = om_arena_bytes(arena, kw->token_size + 2); /* " " for a form without tokens */
        if (padded == NULL)
            goto done;
        padded[0] = ' ';
        memcpy(padded + 1, kw->token, (size_t)kw->token_size);
        padded[kw->token_size + 1] = ' ';
        data[k] = padded;
        size[k] = kw->token_size > 0 ? kw->token_size + 2 : 1;
    }
    for (Py_ssize_t j = 0; j < p_count; j++) {
        data[p_count + g_count + j] = data[j];
        size[p_count + g_count + j] = size[j];
    }
    if (!om_contained(data, size, p_count, g_count, (Py_ssize_t)1 << 22, 0, &found[0], &plain) ||
        !om_contained(data + p_count, size + p_count, g_count, p_count, (Py_ssize_t)1 << 22, 0, &found[1], &plain))
        goto done;
    /* each prediction's gold positions together (counted, then placed), each run sorted */
    for (int d = 0; d < 2; d++)
        for (Py_ssize_t r = 0; r < found[d].length; r++) {
            int64_t j = found[d].columns[d][r], g = found[d].columns[1 - d][r];
            if (d == 0 || size[j] != size[p_count + g]) /* (equal sizes: equal forms, found before) */
                starts[j + 2]++;
        }
    for (Py_ssize_t j = 0; j < p_count; j++)
        starts[j + 2] += starts[j + 1];
    if ((gold_of = PyMem_Malloc((size_t)(starts[p_count + 1] + 1) * sizeof(int64_t))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int d = 0; d < 2; d++)
        for (Py_ssize_t r = 0; r < found[d].length; r++) {
            int64_t j = found[d].columns[d][r], g = found[d].columns[1 - d][r];
            if (d == 0 || size[j] != size[p_count + g])
                gold_of[starts[j + 1]++] = g;
        }
    for (Py_ssize_t j = 0; j < p_count; j++) { /* (starts[j]: the start of j's run) */
        qsort(gold_of + starts[j], (size_t)(starts[j + 1] - starts[j]), sizeof(int64_t), by_position);
        for (int64_t r = starts[j]; r < starts[j + 1]; r++)
            if (!add_row(edges, i, j, gold_of[r]))
                goto done;
    }
    ok = 1;
done:
    PyMem_Free(data);
    PyMem_Free(size);
    PyMem_Free(starts);
    PyMem_Free(gold_of);
    om_free_rows(&found[0]);
    om_free_rows(&found[1]);
    return ok;
}

PyObject *
om_document_edges(PyObject *module, PyObject *args)
{
    PyObject *predictions, *references, *known, *result = NULL, *missing = NULL;
    PyObject *prediction_sizes = NULL, *gold_sizes = NULL;
    Py_buffer table, spaces;
    int collapse, match, plain = 1, incomplete = 0;
    Arena arena = {NULL, NULL, 0, 0, 0};
    KeywordSet gold_set = {NULL, NULL, 0, 0}, prediction_set = {NULL, NULL, 0, 0};
    Keyword *gold_kept = NULL, *predicted_kept = NULL;
    Py_ssize_t gold_room = 0, predicted_room = 0;
    Rows edges = {{NULL, NULL, NULL}, 3, 0, 0};
    double per_byte = INFINITY, fixed = INFINITY;
    if (!PyArg_ParseTuple(args, "OOy*y*iiO!|dd:document_edges", &predictions, &references, &table, &spaces,
                          &collapse, &match, &PyDict_Type, &known, &per_byte, &fixed))
        return NULL;
    Normalization norm;
    if (!om_normalization(&norm, &table, &spaces, collapse))
        goto done;
    int tokens = match == 2;
    if ((!PyList_CheckExact(predictions) && !PyTuple_CheckExact(predictions)) ||
        (!PyList_CheckExact(references) && !PyTuple_CheckExact(references)) ||
        length_of(predictions) != length_of(references)) {
        plain = 0;
        goto done;
    }
    Py_ssize_t n = length_of(predictions);
    missing = PyList_New(0);
    prediction_sizes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    gold_sizes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (missing == NULL || prediction_sizes == NULL || gold_sizes == NULL)
        goto done;
    /* No Python code runs below (the rows are read after the objects above were made, and
     * `known` has exact str keys): the rows, and the strings whose bytes are read, do not
     * change meanwhile. */
    if (length_of(predictions) != n || length_of(references) != n) {
        plain = 0;
        goto done;
    }
    GetItem predicted_of = getter_of(predictions), gold_of = getter_of(references);
    for (int side = 0; side < 2; side++) /* the rows, and room for the longest */
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *row = side ? gold_of(references, i) : predicted_of(predictions, i);
            if (!PyList_CheckExact(row) && !PyTuple_CheckExact(row)) {
                plain = 0;
                goto done;
            }
            Py_ssize_t *room = side ? &gold_room : &predicted_room;
            *room = length_of(row) > *room ? length_of(row) : *room;
        }
    gold_kept = PyMem_Malloc(((size_t)gold_room + 1) * sizeof(Keyword));
    predicted_kept = PyMem_Malloc(((size_t)predicted_room + 1) * sizeof(Keyword));
    if (gold_kept == NULL || predicted_kept == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *predicted_count = (int64_t *)PyBytes_AsString(prediction_sizes);
    int64_t *gold_count = (int64_t *)PyBytes_AsString(gold_sizes);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *gold_row = gold_of(references, i), *predicted_row = predicted_of(predictions, i);
        prefetch_documents(predictions, references, i, n);
        om_arena_rewind(&arena);
        Py_ssize_t g_count = om_keep_row(gold_row, &arena, &norm, match, known, missing, &gold_set, gold_kept, &plain);
        if (g_count == -1)
            goto done;
        Py_ssize_t p_count = om_keep_row(predicted_row, &arena, &norm, match, known, missing, &prediction_set,
                                      predicted_kept, &plain);
        if (p_count == -1)
            goto done;
        if (g_count < 0 || p_count < 0 || incomplete) {
            incomplete = 1;
            continue;
        }
        predicted_count[i] = p_count;
        gold_count[i] = g_count;
        double pairs = (double)p_count * (double)g_count;
        if (match != 0 && pairs > fixed &&
            pairs > per_byte * document_bytes(predicted_kept, p_count, gold_kept, g_count, tokens) + fixed) {
            if (!search_document(i, predicted_kept, p_count, gold_kept, g_count, tokens, &arena, &edges))
                goto done;
            continue;
        }
        for (Py_ssize_t j = 0; j < p_count; j++) {
            const Keyword *p = &predicted_kept[j];
            if (match == 0) { /* exact: the gold keyword of the same form */
                int32_t g = set_find(&gold_set, gold_kept, p, -1);
                if (g >= 0 && !add_row(&edges, i, j, g))
                    goto done;
                continue;
            }
            const char *p_bytes = tokens ? p->token : p->form;
            Py_ssize_t p_size = tokens ? p->token_size : p->form_size;
            for (Py_ssize_t g = 0; g < g_count; g++) {
                const Keyword *q = &gold_kept[g];
                Py_ssize_t q_size = tokens ? q->token_size : q->form_size;
                uint64_t shared = p->bits & q->bits; /* the shorter's bytes must all be in the longer */
                if (shared != (p_size <= q_size ? p->bits : q->bits))
                    continue;
                if (related_strings(p_bytes, p_size, tokens ? q->token : q->form, q_size, tokens) &&
                    !add_row(&edges, i, j, g))
                    goto done;
            }
        }
    }
    if (incomplete) {
        result = missing;
        Py_INCREF(result);
        goto done;
    }
    PyObject *columns = om_rows_as_columns(&edges);
    if (columns != NULL)
        result = Py_BuildValue("(OON)", prediction_sizes, gold_sizes, columns);
done:
    PyBuffer_Release(&table);
    PyBuffer_Release(&spaces);
    om_arena_free(&arena);
    PyMem_Free(gold_set.number);
    PyMem_Free(gold_set.stamp);
    PyMem_Free(prediction_set.number);
    PyMem_Free(prediction_set.stamp);
    PyMem_Free(gold_kept);
    PyMem_Free(predicted_kept);
    om_free_rows(&edges);
    Py_XDECREF(missing);
    Py_XDECREF(prediction_sizes);
    Py_XDECREF(gold_sizes);
    if (result == NULL && !plain && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}
