/* The edges of the matchings on a prepared corpus (its keywords numbered: ids), for
 * opinion_metrics.core (preparation, matching, relations): repeats, exact hits, and the
 * (example, prediction, gold keyword) triples of a relation.
 *
 * first_occurrences(ids, offsets, size) -> keep or None
 *
 *     keep[k] = ids[k] >= 0 and ids[k] not in ids[offsets[r]:k]   (k in row r)
 *
 * as bytes of 0 / 1, or None when every id is kept. ids and offsets: numpy int64 arrays
 * (as are every array argument below), rows ids[offsets[r]:offsets[r + 1]], ids below size.
 *
 * exact_hits(predicted, prediction_offsets, gold, gold_offsets, lists, cutoffs, size) -> hits
 *
 *     hits[i] = len(set(predicted_row(i)[:max(cutoffs[i], 0)]) & set(gold_row(lists[i])))
 *
 * as int64 bytes; the rows as in first_occurrences, each without repeats; cutoffs None for
 * no cutoff.
 *
 * related_edges(predicted, prediction_offsets, gold, gold_offsets, lists, starts, related, size)
 *     -> (examples, predictions, gold_positions)
 *
 * every (i, j, g) where the prediction at position j of example i is related to the gold
 * keyword at position g of its list: related[starts[p]:starts[p + 1]] are the ids related
 * to id p, ascending; the rows as in exact_hits. int64 bytearrays (writable), ordered by
 * example, then j, then g. Each prediction's related ids are looked up in its list (`by` 1),
 * or the list's ids searched among them (`by` 2), or whichever is fewer (`by` 0).
 *
 * The last three mark each list's ids in an array of `size` entries: one pass, no sort of
 * the corpus.
 *
 * pair_edges(strings, predicted, prediction_offsets, gold, gold_offsets, lists, order, match)
 *     -> (examples, predictions, gold_positions) or None
 *
 * every (i, j, g) where the prediction at position j of example i is related to the gold
 * keyword at position g of its list, testing the pair itself: equal ids, or the UTF-8 bytes
 * of strings[id] (match 1: "substring") or of their canonical token forms (match 2:
 * " ".join(s.split()), "token") one inside the other. Time linear in the examples' pairs.
 * `order` None: the examples in turn; else the examples in that order (grouped by list), and
 * each (prediction id, list) tested once, the edges of its later examples copied. The rows
 * as in exact_hits; int64 bytearrays, each example's edges ordered by j, then g. None when a
 * string read is not an exact str or has no UTF-8 (a lone surrogate).
 */
#include "common.h"

/* The int64 items of a buffer (`view->len / 8` of them). */
#define ITEMS(view) ((const int64_t *)(view).buf)
#define COUNT(view) ((view).len / (Py_ssize_t)sizeof(int64_t))

/* The buffers of `count` objects, each a C-contiguous, aligned array of native int64 (a
 * numpy int64 array; object `optional` may be None instead, its view left empty), or 0 with
 * an exception; release with release_views. */
static int
int64_views(PyObject *const *objects, Py_buffer *views, int count, int optional)
{
    for (int v = 0; v < count; v++) {
        if (v == optional && objects[v] == Py_None)
            continue;
        if (PyObject_GetBuffer(objects[v], &views[v], PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return 0;
        const char *format = views[v].format == NULL ? "B" : views[v].format;
        if (*format == '@')
            format++;
        if (views[v].itemsize != 8 || (strcmp(format, "l") != 0 && strcmp(format, "q") != 0) ||
            (uintptr_t)views[v].buf % sizeof(int64_t) != 0) {
            PyErr_SetString(PyExc_TypeError, "expected contiguous, aligned arrays of native int64");
            return 0;
        }
    }
    return 1;
}

static void
release_views(Py_buffer *views, int count)
{
    for (int v = 0; v < count; v++)
        if (views[v].obj != NULL)
            PyBuffer_Release(&views[v]);
}

/* Whether offsets (n + 1 of them) start at 0, never decrease and end at `total`, and the
 * ids are in [-1, size); else a ValueError (the caller's bug). */
static int
check_rows(const int64_t *ids, Py_ssize_t total, const int64_t *offsets, Py_ssize_t n, Py_ssize_t size)
{
    if (n < 0 || offsets[0] != 0 || offsets[n] != total) {
        PyErr_SetString(PyExc_ValueError, "offsets do not cover the ids");
        return 0;
    }
    for (Py_ssize_t r = 0; r < n; r++)
        if (offsets[r + 1] < offsets[r]) {
            PyErr_SetString(PyExc_ValueError, "offsets decrease");
            return 0;
        }
    for (Py_ssize_t k = 0; k < total; k++)
        if (ids[k] < -1 || ids[k] >= size) {
            PyErr_SetString(PyExc_ValueError, "an id is out of range");
            return 0;
        }
    return 1;
}

/* Whether every example's list number is in [0, n_lists); else a ValueError. */
static int
check_lists(const int64_t *lists, Py_ssize_t n, Py_ssize_t n_lists)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (lists[i] < 0 || lists[i] >= n_lists) {
            PyErr_SetString(PyExc_ValueError, "a list is out of range");
            return 0;
        }
    return 1;
}

/* Marks the ids of gold list `list` (marks[id] = list) and, unless `where` is NULL, their
 * positions in it (where[id]). An id marked `list` and not marked since is in that list. */
static void
mark_list(int64_t *marks, int64_t *where, const int64_t *gold, const int64_t *gold_offsets, int64_t list)
{
    for (int64_t k = gold_offsets[list]; k < gold_offsets[list + 1]; k++)
        if (gold[k] >= 0) {
            marks[gold[k]] = list;
            if (where != NULL)
                where[gold[k]] = k - gold_offsets[list];
        }
}

/* An array of `size` int64 marks, all -1 (PyMem_Free it), or NULL with MemoryError. */
static int64_t *
new_marks(Py_ssize_t size)
{
    if (size > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(int64_t)) {
        PyErr_NoMemory();
        return NULL;
    }
    int64_t *marks = PyMem_Malloc((size_t)(size > 0 ? size : 1) * sizeof(int64_t));
    if (marks == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < size; k++)
        marks[k] = -1;
    return marks;
}

PyObject *
om_first_occurrences(PyObject *module, PyObject *args)
{
    PyObject *objects[2], *keep = NULL;
    Py_buffer views[2] = {{0}};
    Py_ssize_t size;
    int64_t *marks = NULL;
    if (!PyArg_ParseTuple(args, "OOn:first_occurrences", &objects[0], &objects[1], &size))
        return NULL;
    if (!int64_views(objects, views, 2, -1))
        goto done;
    const int64_t *ids = ITEMS(views[0]), *offsets = ITEMS(views[1]);
    Py_ssize_t total = COUNT(views[0]), n = COUNT(views[1]) - 1;
    if (!check_rows(ids, total, offsets, n, size) || (marks = new_marks(size)) == NULL)
        goto done;
    char *kept = NULL;
    for (Py_ssize_t r = 0; r < n; r++)
        for (Py_ssize_t k = offsets[r]; k < offsets[r + 1]; k++) {
            int64_t id = ids[k];
            int dropped = id < 0 || marks[id] == r;
            if (!dropped)
                marks[id] = r;
            else if (kept == NULL) { /* the first one dropped: all before it kept */
                keep = PyBytes_FromStringAndSize(NULL, total);
                if (keep == NULL)
                    goto done;
                kept = PyBytes_AsString(keep);
                memset(kept, 1, (size_t)k);
            }
            if (kept != NULL)
                kept[k] = !dropped;
        }
    if (keep == NULL) {
        keep = Py_None;
        Py_INCREF(keep);
    }
done:
    PyMem_Free(marks);
    release_views(views, 2);
    return keep;
}

PyObject *
om_exact_hits(PyObject *module, PyObject *args)
{
    Py_buffer views[6] = {{0}};
    PyObject *objects[6], *hits = NULL;
    Py_ssize_t size;
    int64_t *marks = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOn:exact_hits", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &size))
        return NULL;
    PyObject *cutoffs_object = objects[5];
    if (!int64_views(objects, views, 6, 5))
        goto done;
    const int64_t *predicted = ITEMS(views[0]), *prediction_offsets = ITEMS(views[1]);
    const int64_t *gold = ITEMS(views[2]), *gold_offsets = ITEMS(views[3]), *lists = ITEMS(views[4]);
    const int64_t *cutoffs = cutoffs_object == Py_None ? NULL : ITEMS(views[5]);
    Py_ssize_t n = COUNT(views[1]) - 1, n_lists = COUNT(views[3]) - 1;
    if (!check_rows(predicted, COUNT(views[0]), prediction_offsets, n, size) ||
        !check_rows(gold, COUNT(views[2]), gold_offsets, n_lists, size))
        goto done;
    if (COUNT(views[4]) != n || (cutoffs != NULL && COUNT(views[5]) != n)) {
        PyErr_SetString(PyExc_ValueError, "one list (and cutoff) per example");
        goto done;
    }
    if (!check_lists(lists, n, n_lists))
        goto done;
    if ((marks = new_marks(size)) == NULL || (hits = PyBytes_FromStringAndSize(NULL, n * 8)) == NULL)
        goto done;
    int64_t *hits_of = (int64_t *)PyBytes_AsString(hits);
    int64_t marked = -1; /* the list whose ids are marked (with its number) */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t list = lists[i];
        if (list != marked) {
            mark_list(marks, NULL, gold, gold_offsets, list);
            marked = list;
        }
        int64_t stop = prediction_offsets[i + 1];
        if (cutoffs != NULL && cutoffs[i] < stop - prediction_offsets[i])
            stop = prediction_offsets[i] + (cutoffs[i] > 0 ? cutoffs[i] : 0);
        int64_t count = 0;
        for (int64_t k = prediction_offsets[i]; k < stop; k++)
            count += predicted[k] >= 0 && marks[predicted[k]] == list;
        hits_of[i] = count;
    }
done:
    PyMem_Free(marks);
    release_views(views, 6);
    return hits;
}

PyObject *
om_related_edges(PyObject *module, PyObject *args)
{
    Py_buffer views[7] = {{0}};
    PyObject *objects[7], *result = NULL;
    Py_ssize_t size;
    int by;
    int64_t *marks = NULL, *where = NULL;
    Rows edges = {{NULL, NULL, NULL}, 3, 0, 0};
    if (!PyArg_ParseTuple(args, "OOOOOOOni:related_edges", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6], &size, &by))
        return NULL;
    if (!int64_views(objects, views, 7, -1))
        goto done;
    const int64_t *predicted = ITEMS(views[0]), *prediction_offsets = ITEMS(views[1]);
    const int64_t *gold = ITEMS(views[2]), *gold_offsets = ITEMS(views[3]), *lists = ITEMS(views[4]);
    const int64_t *starts = ITEMS(views[5]), *related = ITEMS(views[6]);
    Py_ssize_t n = COUNT(views[1]) - 1, n_lists = COUNT(views[3]) - 1;
    if (!check_rows(predicted, COUNT(views[0]), prediction_offsets, n, size) ||
        !check_rows(gold, COUNT(views[2]), gold_offsets, n_lists, size) ||
        !check_rows(related, COUNT(views[6]), starts, COUNT(views[5]) - 1, size))
        goto done;
    if (COUNT(views[4]) != n || COUNT(views[5]) != size + 1) {
        PyErr_SetString(PyExc_ValueError, "one list per example and one relation row per id");
        goto done;
    }
    if (!check_lists(lists, n, n_lists))
        goto done;
    if ((marks = new_marks(size)) == NULL || (where = new_marks(size)) == NULL)
        goto done;
    int64_t marked = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t list = lists[i], first = gold_offsets[list], list_size = gold_offsets[list + 1] - first;
        if (list != marked) { /* marks[g] == list: g is in the list, at position where[g] */
            mark_list(marks, where, gold, gold_offsets, list);
            marked = list;
        }
        for (int64_t k = prediction_offsets[i]; k < prediction_offsets[i + 1]; k++) {
            int64_t p = predicted[k], j = k - prediction_offsets[i];
            if (p < 0)
                continue;
            const int64_t *row = related + starts[p];
            int64_t degree = starts[p + 1] - starts[p];
            if (by == 1 || (by == 0 && degree <= list_size)) { /* related ids looked up, ordered by position */
                Py_ssize_t from = edges.length;
                for (int64_t r = 0; r < degree; r++)
                    if (row[r] >= 0 && marks[row[r]] == list && !add_row(&edges, i, j, where[row[r]]))
                        goto done;
                int64_t *positions = edges.columns[2];
                for (Py_ssize_t a = from + 1; a < edges.length; a++) /* a few edges: insertion sort */
                    for (Py_ssize_t b = a; b > from && positions[b - 1] > positions[b]; b--) {
                        int64_t swap = positions[b];
                        positions[b] = positions[b - 1];
                        positions[b - 1] = swap;
                    }
            } else { /* each gold keyword searched among the related ids (ascending) */
                for (int64_t g = 0; g < list_size; g++) {
                    int64_t id = gold[first + g], low = 0, high = degree;
                    while (low < high) {
                        int64_t middle = low + (high - low) / 2;
                        if (row[middle] < id)
                            low = middle + 1;
                        else
                            high = middle;
                    }
                    if (low < degree && row[low] == id && !add_row(&edges, i, j, g))
                        goto done;
                }
            }
        }
    }
    result = om_rows_as_columns(&edges);
done:
    PyMem_Free(marks);
    PyMem_Free(where);
    om_free_rows(&edges);
    release_views(views, 7);
    return result;
}

/* pair_edges: the relation tested on the pairs that meet in a document (the strings
 * compared by common.h's related_strings, as document_edges compares them). */

/* The strings of a vocabulary as pair_edges reads them: each one's UTF-8 bytes, or its
 * canonical token form's, read when first needed and held (a new reference) until the end. */
typedef struct {
    PyObject *strings; /* an exact list of str */
    int tokens;
    PyObject **held; /* per id: the object read (NULL: not yet) */
    const char **data;
    Py_ssize_t *size;
} Vocabulary;

/* Reads string `id` into `v` (once); 0 with an exception, or without one (*plain = 0) when it is
 * not an exact str or has no UTF-8 (a lone surrogate). A token form not canonical already is
 * made as " ".join(s.split()). */
static int
read_string(Vocabulary *v, int64_t id, int *plain)
{
    if (v->held[id] != NULL)
        return 1;
    PyObject *string = PyList_GetItem(v->strings, (Py_ssize_t)id);
    if (string == NULL)
        return 0;
    if (!PyUnicode_CheckExact(string)) {
        *plain = 0;
        return 0;
    }
    Py_INCREF(string);
    const char *data = PyUnicode_AsUTF8AndSize(string, &v->size[id]);
    if (data != NULL && v->tokens && !canonical_tokens(data, v->size[id])) {
        PyObject *parts = PyUnicode_Split(string, NULL, -1), *space = PyUnicode_FromString(" ");
        PyObject *joined = parts == NULL || space == NULL ? NULL : PyUnicode_Join(space, parts);
        Py_XDECREF(parts);
        Py_XDECREF(space);
        Py_DECREF(string);
        string = joined;
        data = string == NULL ? NULL : PyUnicode_AsUTF8AndSize(string, &v->size[id]);
    }
    if (data == NULL) {
        Py_XDECREF(string);
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
            *plain = 0;
        }
        return 0;
    }
    v->held[id] = string;
    v->data[id] = data;
    return 1;
}

PyObject *
om_pair_edges(PyObject *module, PyObject *args)
{
    Py_buffer views[6] = {{0}};
    PyObject *strings, *objects[6], *result = NULL;
    int match, plain = 1;
    int64_t *memo_list = NULL, *memo_start = NULL, *memo_count = NULL;
    Rows edges = {{NULL, NULL, NULL}, 3, 0, 0};
    Vocabulary v = {NULL, 0, NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "O!OOOOOOi:pair_edges", &PyList_Type, &strings, &objects[0], &objects[1],
                          &objects[2], &objects[3], &objects[4], &objects[5], &match))
        return NULL;
    if (!int64_views(objects, views, 6, 5))
        goto done;
    const int64_t *predicted = ITEMS(views[0]), *prediction_offsets = ITEMS(views[1]);
    const int64_t *gold = ITEMS(views[2]), *gold_offsets = ITEMS(views[3]), *lists = ITEMS(views[4]);
    const int64_t *order = objects[5] == Py_None ? NULL : ITEMS(views[5]);
    Py_ssize_t n = COUNT(views[1]) - 1, n_lists = COUNT(views[3]) - 1, size = PyList_Size(strings);
    if (!check_rows(predicted, COUNT(views[0]), prediction_offsets, n, size) ||
        !check_rows(gold, COUNT(views[2]), gold_offsets, n_lists, size))
        goto done;
    if (COUNT(views[4]) != n || (order != NULL && COUNT(views[5]) != n)) {
        PyErr_SetString(PyExc_ValueError, "one list (and one place in the order) per example");
        goto done;
    }
    if (!check_lists(lists, n, n_lists) || (order != NULL && !check_lists(order, n, n)))
        goto done;
    v.strings = strings;
    v.tokens = match == 2;
    v.held = PyMem_Calloc((size_t)size + 1, sizeof(PyObject *));
    v.data = PyMem_Malloc(((size_t)size + 1) * sizeof(char *));
    v.size = PyMem_Malloc(((size_t)size + 1) * sizeof(Py_ssize_t));
    if (v.held == NULL || v.data == NULL || v.size == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* With an order (the examples grouped by list), each (prediction, list) is tested once:
     * memo_list[p] == list: p's edges with that list are rows memo_start[p]... of `edges`. */
    if (order != NULL) {
        if ((memo_list = new_marks(size)) == NULL)
            goto done;
        memo_start = PyMem_Malloc(((size_t)size + 1) * sizeof(int64_t));
        memo_count = PyMem_Malloc(((size_t)size + 1) * sizeof(int64_t));
        if (memo_start == NULL || memo_count == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t t = 0; t < n; t++) {
        int64_t i = order == NULL ? t : order[t];
        int64_t list = lists[i], first = gold_offsets[list], list_size = gold_offsets[list + 1] - first;
        for (int64_t k = prediction_offsets[i]; k < prediction_offsets[i + 1]; k++) {
            int64_t p = predicted[k], j = k - prediction_offsets[i];
            if (p < 0)
                continue;
            if (memo_list != NULL && memo_list[p] == list) {
                for (int64_t r = memo_start[p]; r < memo_start[p] + memo_count[p]; r++)
                    if (!add_row(&edges, i, j, edges.columns[2][r]))
                        goto done;
                continue;
            }
            Py_ssize_t from = edges.length;
            if (!read_string(&v, p, &plain))
                goto done;
            for (int64_t g = 0; g < list_size; g++) {
                int64_t q = gold[first + g];
                if (q < 0)
                    continue;
                if (q != p) {
                    if (!read_string(&v, q, &plain))
                        goto done;
                    if (!related_strings(v.data[p], v.size[p], v.data[q], v.size[q], v.tokens))
                        continue;
                }
                if (!add_row(&edges, i, j, g))
                    goto done;
            }
            if (memo_list != NULL) {
                memo_list[p] = list;
                memo_start[p] = from;
                memo_count[p] = edges.length - from;
            }
        }
    }
    result = om_rows_as_columns(&edges);
done:
    if (v.held != NULL)
        for (Py_ssize_t id = 0; id < size; id++)
            Py_XDECREF(v.held[id]);
    PyMem_Free(v.held);
    PyMem_Free(v.data);
    PyMem_Free(v.size);
    PyMem_Free(memo_list);
    PyMem_Free(memo_start);
    PyMem_Free(memo_count);
    om_free_rows(&edges);
    release_views(views, 6);
    if (result == NULL && !plain && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}
