/* Numbering keywords and rows: the helper's functions that read the corpus's rows of str
 * (and float) and number their distinct items or objects, for opinion_metrics.core.encoding.
 *
 * distinct_codes(lists) -> (sizes, codes, distinct) or None
 *
 *     sizes = [len(row) for row in lists]
 *     codes = [table.setdefault(keyword, len(table)) for row in lists for keyword in row]
 *     distinct = list(table)                                          (table = {} at first)
 *
 * as int64 and uint32 bytes and a list, when every row is a list or tuple and every keyword
 * a str (exact types) and there are fewer than 2**32 - 1 distinct keywords; otherwise None.
 * The table is its own (open addressing on the strings' cached hashes: no int objects, no
 * dict resizes).
 *
 * number_strings(strings, table) -> codes or None
 *
 *     codes = [table.setdefault(string, len(table)) for string in strings]
 *
 * as uint32 bytes, when `strings` is a list or tuple of str (exact types) and `table` stays
 * under 2**32 - 1 entries; otherwise None, and `table` may hold some of the strings. `table`
 * must be a dict of str keys and int values (the library's own tables): then comparing keys
 * runs no Python code, which could change `strings` meanwhile.
 *
 * row_objects(lists) -> (numbers, first) or None
 *
 *     numbers[i] = the number of the object lists[i] among the distinct objects of `lists`,
 *                  numbered in order of first appearance
 *     first[k] = the position where object k first appears
 *
 * as int64 bytes, when `lists` is a list or tuple (exact types); otherwise None. By their
 * addresses alone (a table of its own): the objects are never read.
 *
 * encode_floats(lists) -> (sizes, values) or None
 *
 *     sizes = [len(row) for row in lists]
 *     values = [value for row in lists for value in row]
 *
 * as int64 and float64 bytes, when every row is a list or tuple and every value a float
 * (exact types); otherwise None.
 */
#include "common.h"

/* The rows of `lists` (a new reference, or NULL with an exception) and, in `*sizes`, the
 * bytes of their int64 lengths and in `*total` their sum; `*sizes` stays NULL when a row is
 * not an exact list or tuple. */
static PyObject *
row_sizes(PyObject *lists, PyObject **sizes, Py_ssize_t *total)
{
    *sizes = NULL;
    *total = 0;
    PyObject *rows = PySequence_Fast(lists, "lists must be a sequence");
    if (rows == NULL)
        return NULL;
    Py_ssize_t n = length_of(rows);
    GetItem row_of = getter_of(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_of(rows, i);
        if (!PyList_CheckExact(row) && !PyTuple_CheckExact(row))
            return rows;
    }
    *sizes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (*sizes == NULL) {
        Py_DECREF(rows);
        return NULL;
    }
    int64_t *size_of = (int64_t *)PyBytes_AsString(*sizes);
    for (Py_ssize_t i = 0; i < n; i++) {
        size_of[i] = length_of(row_of(rows, i));
        if (size_of[i] > PY_SSIZE_T_MAX / 8 - *total) { /* the items' bytes would overflow */
            Py_CLEAR(*sizes);
            Py_DECREF(rows);
            PyErr_NoMemory();
            return NULL;
        }
        *total += size_of[i];
    }
    return rows;
}

PyObject *
om_number_strings(PyObject *module, PyObject *args)
{
    PyObject *strings, *table, *codes;
    if (!PyArg_ParseTuple(args, "OO!:number_strings", &strings, &PyDict_Type, &table))
        return NULL;
    if (!PyList_CheckExact(strings) && !PyTuple_CheckExact(strings))
        Py_RETURN_NONE;
    Py_ssize_t n = length_of(strings);
    if ((codes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint32_t))) == NULL)
        return NULL;
    uint32_t *code_of = (uint32_t *)PyBytes_AsString(codes);
    GetItem string_of = getter_of(strings);
    /* Each string is held while it is looked up: a table whose keys are not exact str could
     * run Python code that changes `strings` (then an IndexError, never a freed string). */
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *string = string_of(strings, j);
        if (string == NULL)
            goto fail;
        if (!PyUnicode_CheckExact(string))
            goto not_plain;
        Py_INCREF(string);
        Py_ssize_t code = -1;
        PyObject *known = PyDict_GetItemWithError(table, string); /* borrowed */
        if (known != NULL) {
            code = PyLong_AsSsize_t(known);
        } else if (!PyErr_Occurred()) {
            code = PyDict_Size(table);
            if ((uint64_t)code >= UINT32_MAX) {
                Py_DECREF(string);
                goto not_plain;
            }
            PyObject *number = PyLong_FromSsize_t(code);
            if (number == NULL || PyDict_SetItem(table, string, number) < 0)
                code = -1;
            Py_XDECREF(number);
        }
        Py_DECREF(string);
        if (code == -1 && PyErr_Occurred())
            goto fail;
        code_of[j] = (uint32_t)code;
    }
    return codes;
not_plain:
    Py_DECREF(codes);
    Py_RETURN_NONE;
fail:
    Py_DECREF(codes);
    return NULL;
}

typedef struct {
    PyObject *key; /* borrowed from the rows; NULL: empty */
    Py_hash_t hash;
    uint32_t code;
} Slot;

/* str's own hash function (the cached hash), called without PyObject_Hash's indirection; set
 * when the module is created (module.c). */
hashfunc om_str_hash;

/* The slot of `key` in `slots` (a power-of-2 `mask + 1` of them, never full): its own, or
 * the empty one where it goes; NULL with an exception if comparing failed. */
static Slot *
find_slot(Slot *slots, size_t mask, PyObject *key, Py_hash_t hash)
{
    for (size_t i = (size_t)hash & mask, step = 1;; i = (i + step++) & mask) {
        Slot *slot = &slots[i];
        if (slot->key == NULL || slot->key == key)
            return slot;
        if (slot->hash == hash) {
            int equal = PyObject_RichCompareBool(slot->key, key, Py_EQ); /* exact str: in C */
            if (equal < 0)
                return NULL;
            if (equal)
                return slot;
        }
    }
}

PyObject *
om_distinct_codes(PyObject *module, PyObject *lists)
{
    PyObject *sizes, *codes = NULL, *result = NULL;
    Py_ssize_t total;
    size_t mask = 1023;
    Slot *slots = NULL;
    /* `distinct` first: creating it may collect garbage, and so run Python code that changes
     * a row, which must come before the rows' sizes are read. */
    PyObject *distinct = PyList_New(0);
    if (distinct == NULL)
        return NULL;
    PyObject *rows = row_sizes(lists, &sizes, &total);
    if (rows == NULL) {
        Py_DECREF(distinct);
        return NULL;
    }
    if (sizes == NULL) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    codes = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(uint32_t));
    slots = PyMem_Calloc(mask + 1, sizeof(Slot));
    if (codes == NULL || slots == NULL) {
        if (slots == NULL)
            PyErr_NoMemory();
        goto done;
    }
    uint32_t *code_of = (uint32_t *)PyBytes_AsString(codes);
    const int64_t *size_of = (const int64_t *)PyBytes_AsString(sizes);
    Py_ssize_t n = length_of(rows);
    GetItem row_of = getter_of(rows);
    /* Only `distinct` grows below, and it holds exact str: no garbage collection, no Python
     * code (exact str hash and compare run in C), so no row changes meanwhile (checked). */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_of(rows, i);
        Py_ssize_t m = length_of(row);
        GetItem keyword_of = getter_of(row);
        if (m != size_of[i]) {
            PyErr_SetString(PyExc_RuntimeError, "a row changed size while it was read");
            goto done;
        }
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *keyword = keyword_of(row, j);
            if (!PyUnicode_CheckExact(keyword)) {
                result = Py_None;
                Py_INCREF(result);
                goto done;
            }
            Py_hash_t hash = om_str_hash(keyword);
            if (hash == -1)
                goto done;
            Slot *slot = find_slot(slots, mask, keyword, hash);
            if (slot == NULL)
                goto done;
            if (slot->key == NULL) { /* a new keyword */
                Py_ssize_t code = PyList_Size(distinct);
                if ((uint64_t)code >= UINT32_MAX) { /* as number_strings: codes below 2**32 - 1 */
                    result = Py_None;
                    Py_INCREF(result);
                    goto done;
                }
                if (PyList_Append(distinct, keyword) < 0)
                    goto done;
                *slot = (Slot){keyword, hash, (uint32_t)code};
                if ((size_t)code + 1 > (mask + 1) / 2) { /* half full: twice the slots */
                    size_t grown_mask = 2 * mask + 1;
                    Slot *grown = PyMem_Calloc(grown_mask + 1, sizeof(Slot));
                    if (grown == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    for (size_t k = 0; k <= mask; k++)
                        if (slots[k].key != NULL)
                            *find_slot(grown, grown_mask, slots[k].key, slots[k].hash) = slots[k];
                    PyMem_Free(slots);
                    slots = grown;
                    mask = grown_mask;
                }
                *code_of++ = (uint32_t)code;
            } else {
                *code_of++ = slot->code;
            }
        }
    }
    result = Py_BuildValue("(OOO)", sizes, codes, distinct);
done:
    PyMem_Free(slots);
    Py_XDECREF(sizes);
    Py_XDECREF(codes);
    Py_XDECREF(distinct);
    Py_DECREF(rows);
    return result;
}

/* An object's entry in a table of addresses: the object itself is never read. */
typedef struct {
    PyObject *key; /* NULL: empty */
    uint32_t code;
} Seen;

/* The entry of the object `key` in `seen` (a power-of-2 `mask + 1` of them, never full): its
 * own, or the empty one where it goes. */
static Seen *
find_seen(Seen *seen, size_t mask, PyObject *key)
{
    uint64_t hash = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15); /* Fibonacci hashing */
    for (size_t i = (size_t)(hash ^ hash >> 32) & mask;; i = (i + 1) & mask)
        if (seen[i].key == key || seen[i].key == NULL)
            return &seen[i];
}

PyObject *
om_row_objects(PyObject *module, PyObject *lists)
{
    if (!PyList_CheckExact(lists) && !PyTuple_CheckExact(lists))
        Py_RETURN_NONE;
    Py_ssize_t n = length_of(lists), count = 0;
    if ((uint64_t)n >= UINT32_MAX) /* object numbers as Seen's codes */
        Py_RETURN_NONE;
    size_t mask = 15;
    while (mask / 2 < (size_t)n) /* at most half full: one allocation, no growth */
        mask = 2 * mask + 1;
    PyObject *numbers = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t)), *firsts = NULL;
    int64_t *first = PyMem_Malloc((size_t)(n + 1) * sizeof(int64_t));
    Seen *seen = PyMem_Calloc(mask + 1, sizeof(Seen));
    if (numbers == NULL || first == NULL || seen == NULL) {
        if (numbers != NULL)
            PyErr_NoMemory();
        goto done;
    }
    int64_t *number_of = (int64_t *)PyBytes_AsString(numbers);
    GetItem row_of = getter_of(lists);
    /* Addresses compared, C memory allocated: no Python code runs, so `lists` does not change. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_of(lists, i);
        if (row == NULL)
            goto done;
        Seen *met = find_seen(seen, mask, row);
        if (met->key == row) {
            number_of[i] = met->code;
            continue;
        }
        *met = (Seen){row, (uint32_t)count};
        number_of[i] = count;
        first[count++] = i;
    }
    firsts = PyBytes_FromStringAndSize((const char *)first, count * (Py_ssize_t)sizeof(int64_t));
done:
    PyMem_Free(first);
    PyMem_Free(seen);
    PyObject *result = firsts == NULL ? NULL : PyTuple_Pack(2, numbers, firsts);
    Py_XDECREF(numbers);
    Py_XDECREF(firsts);
    return result;
}

PyObject *
om_encode_floats(PyObject *module, PyObject *lists)
{
    PyObject *sizes, *values = NULL;
    Py_ssize_t total;
    PyObject *rows = row_sizes(lists, &sizes, &total);
    if (rows == NULL)
        return NULL;
    if (sizes == NULL)
        goto not_plain;
    values = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(double));
    if (values == NULL) {
        Py_DECREF(sizes);
        Py_DECREF(rows);
        return NULL;
    }
    double *value_of = (double *)PyBytes_AsString(values);
    Py_ssize_t n = length_of(rows);
    GetItem row_of = getter_of(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_of(rows, i);
        Py_ssize_t m = length_of(row);
        GetItem value_of_item = getter_of(row);
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *value = value_of_item(row, j);
            if (!PyFloat_CheckExact(value))
                goto not_plain;
            *value_of++ = PyFloat_AsDouble(value);
        }
    }
    Py_DECREF(rows);
    return Py_BuildValue("(NN)", sizes, values);
not_plain:
    Py_XDECREF(sizes);
    Py_XDECREF(values);
    Py_DECREF(rows);
    Py_RETURN_NONE;
}
