/* The field's counting of sentiment tuples, for opinion_metrics.core.tuple_matching (its twin:
 * `_membership_in_python`).
 *
 * membership_hits(predictions, references, width, masks, labels) -> hits or None
 *
 *     hits[i][k] = #{t in predictions[i] : some g in references[i] has t[c] == g[c] for
 *                    every column c in masks[k]}      (strings compared stripped, as str.strip)
 *
 * as int64 bytes (examples x (masks + 2): then each example's numbers of predicted and gold
 * tuples), when both sides are lists or tuples of the same length
 * whose rows are lists or tuples of tuples, each tuple a list or tuple of `width` elements, each
 * element an exact str that is not blank once stripped or, outside the `labels` columns (a bit
 * mask), None; otherwise None (the twin then names what is wrong). Comparing runs no Python
 * code, so nothing can change the rows meanwhile. */
#include "common.h"

typedef struct {
    const char *data;
    Py_ssize_t size; /* -1: None */
} Text;

/* The length in bytes of the white space character (str.isspace) that starts at `at`, or 0. */
static int
space_at(const unsigned char *at, const unsigned char *end)
{
    Py_ssize_t left = end - at;
    if (left < 1)
        return 0;
    if (at[0] < 0x80)
        return ascii_space(at[0]) ? 1 : 0;
    if (left >= 2 && at[0] == 0xC2 && (at[1] == 0x85 || at[1] == 0xA0)) /* U+0085, U+00A0 */
        return 2;
    if (left < 3)
        return 0;
    if (at[0] == 0xE1 && at[1] == 0x9A && at[2] == 0x80) /* U+1680 */
        return 3;
    if (at[0] == 0xE2 && at[1] == 0x80 && ((at[2] >= 0x80 && at[2] <= 0x8A) || at[2] == 0xA8 || at[2] == 0xA9 ||
                                           at[2] == 0xAF)) /* U+2000-U+200A, U+2028, U+2029, U+202F */
        return 3;
    if (at[0] == 0xE2 && at[1] == 0x81 && at[2] == 0x9F) /* U+205F */
        return 3;
    if (at[0] == 0xE3 && at[1] == 0x80 && at[2] == 0x80) /* U+3000 */
        return 3;
    return 0;
}

/* The length of the white space character that ends at `end` (after `start`), or 0. */
static int
space_before(const unsigned char *start, const unsigned char *end)
{
    for (int size = 1; size <= 3; size++)
        if (end - start >= size && space_at(end - size, end) == size)
            return size;
    return 0;
}

/* `item` as its stripped UTF-8 bytes in *text: 1; 0 where it is not an exact str or None (or
 * blank, or None in a label column, or a str with a lone surrogate). */
static int
stripped(PyObject *item, int label, Text *text)
{
    if (item == Py_None) {
        text->data = NULL;
        text->size = -1;
        return !label;
    }
    if (!PyUnicode_CheckExact(item))
        return 0;
    Py_ssize_t size;
    const char *data = PyUnicode_AsUTF8AndSize(item, &size);
    if (data == NULL) {
        PyErr_Clear();
        return 0;
    }
    const unsigned char *start = (const unsigned char *)data, *end = start + size;
    int step;
    while ((step = space_at(start, end)) > 0)
        start += step;
    while ((step = space_before(start, end)) > 0)
        end -= step;
    if (start == end)
        return 0;
    text->data = (const char *)start;
    text->size = end - start;
    return 1;
}

/* The stripped texts of a row of tuples into texts[width * j + c]; 0 where a tuple is not fast. */
static int
row_texts(PyObject *row, int width, uint64_t labels, Text *texts)
{
    Py_ssize_t n = length_of(row);
    GetItem tuple_of = getter_of(row);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *tuple = tuple_of(row, j);
        if ((!PyList_CheckExact(tuple) && !PyTuple_CheckExact(tuple)) || length_of(tuple) != width)
            return 0;
        GetItem item_of = getter_of(tuple);
        for (int c = 0; c < width; c++)
            if (!stripped(item_of(tuple, c), (int)(labels >> c & 1), &texts[width * j + c]))
                return 0;
    }
    return 1;
}

static int
same_text(const Text *a, const Text *b)
{
    if (a->size != b->size)
        return 0;
    return a->size < 0 || memcmp(a->data, b->data, (size_t)a->size) == 0;
}

PyObject *
om_membership_hits(PyObject *module, PyObject *args)
{
    PyObject *predictions, *references, *masks_list;
    int width;
    unsigned long long labels;
    if (!PyArg_ParseTuple(args, "OOiOK", &predictions, &references, &width, &masks_list, &labels))
        return NULL;
    if (width < 1 || width > 32 || !PyList_CheckExact(masks_list))
        Py_RETURN_NONE;
    if ((!PyList_CheckExact(predictions) && !PyTuple_CheckExact(predictions)) ||
        (!PyList_CheckExact(references) && !PyTuple_CheckExact(references)))
        Py_RETURN_NONE;
    Py_ssize_t n = length_of(predictions), count = PyList_Size(masks_list);
    if (length_of(references) != n || count < 1 || count > 64)
        Py_RETURN_NONE;
    uint64_t masks[64];
    for (Py_ssize_t k = 0; k < count; k++) {
        masks[k] = (uint64_t)PyLong_AsUnsignedLongLong(PyList_GetItem(masks_list, k));
        if (PyErr_Occurred())
            return NULL;
    }
    uint64_t every = count == 64 ? ~(uint64_t)0 : ((uint64_t)1 << count) - 1;
    Py_ssize_t stride = count + 2; /* the hits per mask, then the two sizes */
    PyObject *result = PyBytes_FromStringAndSize(NULL, n * stride * (Py_ssize_t)sizeof(int64_t));
    if (result == NULL)
        return NULL;
    int64_t *hits = (int64_t *)PyBytes_AsString(result);
    memset(hits, 0, (size_t)(n * stride) * sizeof(int64_t));
    Text *gold = NULL, *predicted = NULL;
    Py_ssize_t gold_capacity = 0, predicted_capacity = 0;
    GetItem predicted_row = getter_of(predictions), gold_row = getter_of(references);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *prow = predicted_row(predictions, i), *grow = gold_row(references, i);
        if ((!PyList_CheckExact(prow) && !PyTuple_CheckExact(prow)) ||
            (!PyList_CheckExact(grow) && !PyTuple_CheckExact(grow)))
            goto not_fast;
        Py_ssize_t ng = length_of(grow), np_ = length_of(prow);
        if (ng * width > gold_capacity || np_ * width > predicted_capacity) {
            Py_ssize_t wanted = (ng > np_ ? ng : np_) * width + 64;
            Text *grown_gold = PyMem_Realloc(gold, (size_t)wanted * sizeof(Text));
            if (grown_gold == NULL)
                goto no_memory;
            gold = grown_gold;
            Text *grown_predicted = PyMem_Realloc(predicted, (size_t)wanted * sizeof(Text));
            if (grown_predicted == NULL)
                goto no_memory;
            predicted = grown_predicted;
            gold_capacity = predicted_capacity = wanted;
        }
        if (!row_texts(grow, width, labels, gold) || !row_texts(prow, width, labels, predicted))
            goto not_fast;
        for (Py_ssize_t t = 0; t < np_; t++) {
            const Text *p = &predicted[width * t];
            uint64_t seen = 0;
            for (Py_ssize_t j = 0; j < ng && seen != every; j++) {
                const Text *g = &gold[width * j];
                uint64_t equal = 0;
                for (int c = 0; c < width; c++)
                    if (same_text(&p[c], &g[c]))
                        equal |= (uint64_t)1 << c;
                for (Py_ssize_t k = 0; k < count; k++)
                    if ((equal & masks[k]) == masks[k])
                        seen |= (uint64_t)1 << k;
            }
            for (Py_ssize_t k = 0; k < count; k++)
                hits[i * stride + k] += (int64_t)(seen >> k & 1);
        }
        hits[i * stride + count] = np_;
        hits[i * stride + count + 1] = ng;
    }
    PyMem_Free(gold);
    PyMem_Free(predicted);
    return result;
not_fast:
    PyMem_Free(gold);
    PyMem_Free(predicted);
    Py_DECREF(result);
    Py_RETURN_NONE;
no_memory:
    PyMem_Free(gold);
    PyMem_Free(predicted);
    Py_DECREF(result);
    return PyErr_NoMemory();
}

/* The buffer of a C-contiguous, aligned array of native int64 into *view; 0 with TypeError. */
static int
int64_view(PyObject *object, Py_buffer *view)
{
    if (PyObject_GetBuffer(object, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return 0;
    const char *format = view->format == NULL ? "B" : view->format;
    if (*format == '@')
        format++;
    if (view->itemsize != 8 || (strcmp(format, "l") != 0 && strcmp(format, "q") != 0) ||
        (uintptr_t)view->buf % sizeof(int64_t) != 0) {
        PyErr_SetString(PyExc_TypeError, "expected contiguous, aligned arrays of native int64");
        return 0;
    }
    return 1;
}

/* Whether `n + 1` offsets start at 0, never decrease and end at `rows`; else a ValueError. */
static int
offsets_cover(const int64_t *offsets, Py_ssize_t n, Py_ssize_t rows)
{
    int good = offsets[0] == 0 && offsets[n] == rows;
    for (Py_ssize_t i = 0; good && i < n; i++)
        good = offsets[i + 1] >= offsets[i];
    if (!good)
        PyErr_SetString(PyExc_ValueError, "offsets do not cover the rows");
    return good;
}

/* Whether rows a and b (of `width` ids) are equal on the columns of `mask`. */
static inline int
equal_on(const int64_t *a, const int64_t *b, int width, uint64_t mask)
{
    for (int c = 0; c < width; c++)
        if ((mask >> c & 1) && a[c] != b[c])
            return 0;
    return 1;
}

/* Whether row `r` of `rows` repeats an earlier row from `start` on the mask's columns. */
static inline int
repeats(const int64_t *ids, int64_t start, int64_t r, int width, uint64_t mask)
{
    for (int64_t q = start; q < r; q++)
        if (equal_on(ids + q * width, ids + r * width, width, mask))
            return 1;
    return 0;
}

/* exact_tuple_counts(pred_offsets, pred_ids, gold_offsets, gold_ids, width, masks, limit) -> counts
 *
 *     counts[i][k] = (kept predictions, kept gold tuples, matched) of example i on the columns of
 *                    masks[k]: a kept tuple is the first of its example with its ids there, and
 *                    matched counts the kept predictions equal there to some gold tuple
 *
 * as int64 bytes (examples x masks x 3), the ids rows of `width` int64 (the prepared elements);
 * an example with more than `limit` pairs of tuples (|P| |G|, |P|² or |G|²) gets -1 everywhere:
 * its caller counts it by hashing (its twin: the numpy pairs of `tuple_counts`). */
PyObject *
om_exact_tuple_counts(PyObject *module, PyObject *args)
{
    PyObject *objects[4], *masks_list, *result = NULL;
    Py_buffer views[4] = {{0}};
    int width;
    long long limit;
    if (!PyArg_ParseTuple(args, "OOOOiO!L", &objects[0], &objects[1], &objects[2], &objects[3], &width, &PyList_Type,
                          &masks_list, &limit))
        return NULL;
    Py_ssize_t count = PyList_Size(masks_list);
    if (width < 1 || width > 32 || count < 1 || count > 64) {
        PyErr_SetString(PyExc_ValueError, "1 to 32 columns and 1 to 64 masks");
        return NULL;
    }
    uint64_t masks[64];
    for (Py_ssize_t k = 0; k < count; k++) {
        masks[k] = (uint64_t)PyLong_AsUnsignedLongLong(PyList_GetItem(masks_list, k));
        if (PyErr_Occurred())
            return NULL;
    }
    for (int v = 0; v < 4; v++)
        if (!int64_view(objects[v], &views[v]))
            goto done;
    const int64_t *pred_offsets = views[0].buf, *pred = views[1].buf, *gold_offsets = views[2].buf, *gold = views[3].buf;
    Py_ssize_t n = views[0].len / 8 - 1;
    if (n < 0 || views[2].len / 8 - 1 != n || views[1].len / 8 % width || views[3].len / 8 % width) {
        PyErr_SetString(PyExc_ValueError, "offsets of as many examples, and rows of `width` ids");
        goto done;
    }
    if (!offsets_cover(pred_offsets, n, views[1].len / 8 / width) ||
        !offsets_cover(gold_offsets, n, views[3].len / 8 / width))
        goto done;
    result = PyBytes_FromStringAndSize(NULL, n * count * 3 * (Py_ssize_t)sizeof(int64_t));
    if (result == NULL)
        goto done;
    int64_t *out = (int64_t *)PyBytes_AsString(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t p0 = pred_offsets[i], p1 = pred_offsets[i + 1], g0 = gold_offsets[i], g1 = gold_offsets[i + 1];
        int64_t np_ = p1 - p0, ng = g1 - g0, most = np_ > ng ? np_ : ng;
        int64_t *row = out + i * count * 3;
        if (most * most > limit) {
            for (Py_ssize_t k = 0; k < 3 * count; k++)
                row[k] = -1;
            continue;
        }
        for (Py_ssize_t k = 0; k < count; k++) {
            int64_t kept_pred = 0, kept_gold = 0, matched = 0;
            for (int64_t r = p0; r < p1; r++) {
                if (repeats(pred, p0, r, width, masks[k]))
                    continue;
                kept_pred++;
                for (int64_t g = g0; g < g1; g++)
                    if (equal_on(pred + r * width, gold + g * width, width, masks[k])) {
                        matched++;
                        break;
                    }
            }
            for (int64_t g = g0; g < g1; g++)
                kept_gold += !repeats(gold, g0, g, width, masks[k]);
            row[3 * k] = kept_pred, row[3 * k + 1] = kept_gold, row[3 * k + 2] = matched;
        }
    }
done:
    for (int v = 0; v < 4; v++)
        if (views[v].obj != NULL)
            PyBuffer_Release(&views[v]);
    return result;
}
