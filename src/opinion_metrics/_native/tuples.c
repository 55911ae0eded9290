/* Numbering the strings of sentiment tuples, for opinion_metrics.core.tuples (its twin: the
 * flattening and `encode_lists` of `Preparer._bulk`).
 *
 * tuple_codes(rows, width) -> (sizes, codes, distinct) or None
 *
 *     sizes = [len(row) for row in rows]
 *     codes = [table.setdefault(value, len(table)) for row in rows for item in row for value in item]
 *     distinct = list(table)                                           (table = {} at first)
 *
 * as int64 and uint32 bytes and a list, when `rows` is a list or tuple of lists or tuples of
 * tuples, every tuple a list or tuple of `width` exact str (each encodable in UTF-8), and there
 * are fewer than 2**32 - 1 distinct strings; otherwise None. The table is its own (open
 * addressing on a hash of each string's UTF-8 bytes): the rows are read once, without a
 * Python list of tuples, and the strings' own hashes (Python's SipHash, cached in each string:
 * a write to every string a file's parser made) are left alone. */
#include "common.h"

typedef struct {
    const char *data; /* the UTF-8 bytes of a string of the rows (borrowed); NULL: empty */
    Py_ssize_t size;
    uint64_t hash;
    uint32_t code;
} Slot;

/* FNV-1a over the bytes, eight at a time, then mixed (the table's hash; not Python's). */
static inline uint64_t
hash_bytes(const char *data, Py_ssize_t size)
{
    uint64_t hash = 0xcbf29ce484222325u ^ (uint64_t)size;
    Py_ssize_t k = 0;
    for (; k + 8 <= size; k += 8) {
        uint64_t word;
        memcpy(&word, data + k, 8);
        hash = (hash ^ word) * 0x100000001b3u;
    }
    for (; k < size; k++)
        hash = (hash ^ (uint8_t)data[k]) * 0x100000001b3u;
    hash ^= hash >> 33;
    hash *= 0xff51afd7ed558ccdu;
    return hash ^ (hash >> 33);
}

/* The slot of the string: its own, or the empty one where it goes. */
static Slot *
slot_of(Slot *slots, size_t mask, const char *data, Py_ssize_t size, uint64_t hash)
{
    for (size_t i = (size_t)hash & mask, step = 1;; i = (i + step++) & mask) {
        Slot *slot = &slots[i];
        if (slot->data == NULL ||
            (slot->hash == hash && slot->size == size && memcmp(slot->data, data, (size_t)size) == 0))
            return slot;
    }
}

/* Twice the slots, the entries moved; 0 with MemoryError. */
static int
grow(Slot **slots, size_t *mask)
{
    size_t grown_mask = 2 * *mask + 1;
    Slot *grown = PyMem_Calloc(grown_mask + 1, sizeof(Slot));
    if (grown == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    for (size_t k = 0; k <= *mask; k++)
        if ((*slots)[k].data != NULL)
            *slot_of(grown, grown_mask, (*slots)[k].data, (*slots)[k].size, (*slots)[k].hash) = (*slots)[k];
    PyMem_Free(*slots);
    *slots = grown;
    *mask = grown_mask;
    return 1;
}

/* The number of tuples of `rows` (each row an exact list or tuple of exact lists or tuples of
 * `width` items) into *total, their sizes written to `sizes` when not NULL; 0 where a row or a
 * tuple is not of that shape. */
static int
shape(PyObject *rows, Py_ssize_t width, int64_t *sizes, Py_ssize_t *total)
{
    Py_ssize_t n = length_of(rows);
    GetItem row_of = getter_of(rows);
    *total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_of(rows, i);
        if (!PyList_CheckExact(row) && !PyTuple_CheckExact(row))
            return 0;
        Py_ssize_t m = length_of(row);
        GetItem item_of = getter_of(row);
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *item = item_of(row, j);
            if ((!PyList_CheckExact(item) && !PyTuple_CheckExact(item)) || length_of(item) != width)
                return 0;
        }
        if (sizes != NULL)
            sizes[i] = m;
        *total += m;
    }
    return 1;
}

PyObject *
om_tuple_codes(PyObject *module, PyObject *args)
{
    PyObject *rows, *sizes = NULL, *codes = NULL, *result = NULL;
    Py_ssize_t width, total;
    if (!PyArg_ParseTuple(args, "On", &rows, &width))
        return NULL;
    if ((!PyList_CheckExact(rows) && !PyTuple_CheckExact(rows)) || width < 1 || !shape(rows, width, NULL, &total))
        Py_RETURN_NONE;
    if (total > PY_SSIZE_T_MAX / width / 8)
        return PyErr_NoMemory();
    /* `distinct` first: creating it may collect garbage (and so run Python code) before the
     * rows are read; below only it grows (and a str's UTF-8 form may be made): no Python code
     * runs, so the rows, which hold the strings whose bytes the table points to, cannot change. */
    PyObject *distinct = PyList_New(0);
    Slot *slots = NULL;
    size_t mask = 1023;
    if (distinct == NULL)
        return NULL;
    Py_ssize_t n = length_of(rows);
    sizes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    codes = PyBytes_FromStringAndSize(NULL, total * width * (Py_ssize_t)sizeof(uint32_t));
    slots = PyMem_Calloc(mask + 1, sizeof(Slot));
    if (sizes == NULL || codes == NULL || slots == NULL) {
        if (slots == NULL)
            PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t again;
    if (!shape(rows, width, (int64_t *)PyBytes_AsString(sizes), &again) || again != total) {
        PyErr_SetString(PyExc_RuntimeError, "the rows changed while they were read");
        goto done;
    }
    uint32_t *code_of = (uint32_t *)PyBytes_AsString(codes);
    GetItem row_of = getter_of(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_of(rows, i);
        Py_ssize_t m = length_of(row);
        GetItem item_of = getter_of(row);
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *item = item_of(row, j);
            GetItem value_of = getter_of(item);
            for (Py_ssize_t c = 0; c < width; c++) {
                PyObject *value = value_of(item, c);
                Py_ssize_t size;
                const char *data = PyUnicode_CheckExact(value) ? PyUnicode_AsUTF8AndSize(value, &size) : NULL;
                if (data == NULL) { /* not an exact str, or a lone surrogate: the twin says which */
                    PyErr_Clear();
                    result = Py_None;
                    Py_INCREF(result);
                    goto done;
                }
                uint64_t hash = hash_bytes(data, size);
                Slot *slot = slot_of(slots, mask, data, size, hash);
                if (slot->data == NULL) { /* a new string */
                    Py_ssize_t code = PyList_Size(distinct);
                    if ((uint64_t)code >= UINT32_MAX) {
                        result = Py_None;
                        Py_INCREF(result);
                        goto done;
                    }
                    if (PyList_Append(distinct, value) < 0)
                        goto done;
                    *slot = (Slot){data, size, hash, (uint32_t)code};
                    if ((size_t)code + 1 > (mask + 1) / 2 && !grow(&slots, &mask)) /* half full */
                        goto done;
                    *code_of++ = (uint32_t)code;
                } else {
                    *code_of++ = slot->code;
                }
            }
        }
    }
    result = Py_BuildValue("(OOO)", sizes, codes, distinct);
done:
    PyMem_Free(slots);
    Py_XDECREF(sizes);
    Py_XDECREF(codes);
    Py_DECREF(distinct);
    return result;
}
