/* document_edges: each document's keywords normalized and de-duplicated (normalization.c)
 * and related on their own, for opinion_metrics.core.documents.
 *
 * document_edges(predictions, references, table, spaces, collapse, match, known)
 *     -> (prediction_sizes, gold_sizes, (examples, predictions, gold_positions)), missing or None
 *
 * each example on its own, with no vocabulary: its keywords normalized, empty and repeated
 * forms dropped, and every (prediction, gold keyword) pair of the kept ones related (match 0
 * exact, 1 substring, 2 token); positions among the kept keywords, sizes their counts (int64
 * bytes). ASCII keywords are normalized here: each byte replaced by table[byte] (255:
 * removed), then runs of `spaces` bytes made one space and stripped (collapse 1) or only
 * stripped (0). Others are looked up in `known` (a dict of exact str: (form, token form));
 * when some are not there, the list of those (`missing`) is returned instead, for Python to
 * normalize and call again. None unless both sides are lists or tuples of as many rows, each
 * a list or tuple of exact str without lone surrogates.
 */
#include "documents.h"

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
    if (!PyArg_ParseTuple(args, "OOy*y*iiO!:document_edges", &predictions, &references, &table, &spaces, &collapse,
                          &match, &PyDict_Type, &known))
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
