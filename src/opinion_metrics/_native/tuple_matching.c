/* The field's counting of sentiment tuples, for opinion_metrics.core.tuple_matching (its twin:
 * `_membership_in_python`).
 *
 * membership_hits(predictions, references, width, masks, labels) -> hits or None
 *
 *     hits[i][k] = #{t in predictions[i] : some g in references[i] has t[c] == g[c] for
 *                    every column c in masks[k]}      (strings compared stripped, as str.strip)
 *
 * as int64 bytes (examples x masks), when both sides are lists or tuples of the same length
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
    PyObject *result = PyBytes_FromStringAndSize(NULL, n * count * (Py_ssize_t)sizeof(int64_t));
    if (result == NULL)
        return NULL;
    int64_t *hits = (int64_t *)PyBytes_AsString(result);
    memset(hits, 0, (size_t)(n * count) * sizeof(int64_t));
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
                hits[i * count + k] += (int64_t)(seen >> k & 1);
        }
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
