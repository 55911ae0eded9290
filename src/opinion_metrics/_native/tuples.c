/* Numbering the strings of sentiment tuples, for opinion_metrics.core.tuples (its twin: the
 * flattening and `encode_lists` of `Preparer._bulk`).
 *
 * tuple_codes(rows, width, others=None) -> (sizes, codes, distinct) or None
 *
 *     sizes = [len(row) for row in rows]
 *     codes = [table.setdefault(value, len(table)) for row in rows for item in row for value in item]
 *     distinct = list(table)                                           (table = {} at first)
 *
 * as int64 and uint32 bytes and a list, when `rows` is a list or tuple of lists or tuples of
 * tuples, every tuple a list or tuple of `width` exact str (each encodable in UTF-8), and there
 * are fewer than 2**32 - 1 distinct strings; otherwise None. With `others` (rows of the other
 * side, as many), (sizes, codes, other_sizes, other_codes, distinct): example by example, the
 * other side's row first, then the row; a string of the row equal to one in the same column of
 * the other row takes its code without a look in the table (a prediction mostly repeats a gold
 * tuple). The table is its own (open
 * addressing on a hash of each string's UTF-8 bytes): the rows are read once, without a
 * Python list of tuples, and the strings' own hashes (Python's SipHash, cached in each string:
 * a write to every string a file's parser made) are left alone. */
#include "common.h"

typedef struct {
    const char *data; /* UTF-8 bytes of a string of the rows (borrowed) */
    Py_ssize_t size;
} Text;

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

/* A growing array of uint32 codes (PyMem); 0 with MemoryError. */
typedef struct {
    uint32_t *items;
    Py_ssize_t length, capacity;
} Codes;

static int
reserve(Codes *codes, Py_ssize_t more)
{
    if (codes->length + more <= codes->capacity)
        return 1;
    Py_ssize_t capacity = codes->capacity ? codes->capacity : 1 << 16;
    while (capacity < codes->length + more)
        capacity *= 2;
    if ((size_t)capacity > PY_SSIZE_T_MAX / sizeof(uint32_t)) {
        PyErr_NoMemory();
        return 0;
    }
    uint32_t *grown = PyMem_Realloc(codes->items, (size_t)capacity * sizeof(uint32_t));
    if (grown == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    codes->items = grown;
    codes->capacity = capacity;
    return 1;
}

/* The table of one call: the distinct strings and where they are. */
typedef struct {
    Slot *slots;
    size_t mask;
    PyObject *distinct;
} Coder;

/* `value`'s code (a new one when the table lacks it) into *code and its UTF-8 bytes into *text:
 * 1; 0 where it is not an exact str encodable in UTF-8 (no exception), -1 with an exception. */
static int
code_of(Coder *coder, PyObject *value, uint32_t *code, Text *text)
{
    if (!PyUnicode_CheckExact(value))
        return 0;
    text->data = PyUnicode_AsUTF8AndSize(value, &text->size);
    if (text->data == NULL) { /* a lone surrogate: the twin names it */
        PyErr_Clear();
        return 0;
    }
    uint64_t hash = hash_bytes(text->data, text->size);
    Slot *slot = slot_of(coder->slots, coder->mask, text->data, text->size, hash);
    if (slot->data != NULL) {
        *code = slot->code;
        return 1;
    }
    Py_ssize_t next = PyList_Size(coder->distinct);
    if ((uint64_t)next >= UINT32_MAX)
        return 0;
    if (PyList_Append(coder->distinct, value) < 0)
        return -1;
    *slot = (Slot){text->data, text->size, hash, (uint32_t)next};
    *code = (uint32_t)next;
    if ((size_t)next + 1 > (coder->mask + 1) / 2 && !grow(&coder->slots, &coder->mask)) /* half full */
        return -1;
    return 1;
}

/* Codes the tuples of `row` (each an exact list or tuple of `width` items) at the end of
 * `codes` (and their bytes into texts, `width` per tuple); a value equal to one in the same
 * column of the `known_count` tuples at `known` takes its code. 1, 0 (not fast) or -1 (an
 * exception). */
static int
code_row(Coder *coder, PyObject *row, Py_ssize_t width, Codes *codes, Text *texts, const uint32_t *known_codes,
         const Text *known, Py_ssize_t known_count)
{
    Py_ssize_t m = length_of(row);
    GetItem item_of = getter_of(row);
    if (!reserve(codes, m * width))
        return -1;
    uint32_t *out = codes->items + codes->length;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *item = item_of(row, j);
        if ((!PyList_CheckExact(item) && !PyTuple_CheckExact(item)) || length_of(item) != width)
            return 0;
        GetItem value_of = getter_of(item);
        for (Py_ssize_t c = 0; c < width; c++) {
            PyObject *value = value_of(item, c);
            Text *text = &texts[j * width + c];
            int coded = 0; /* by an equal string of the known tuples */
            if (known_count && PyUnicode_CheckExact(value)) {
                text->data = PyUnicode_AsUTF8AndSize(value, &text->size);
                if (text->data == NULL) {
                    PyErr_Clear();
                    return 0;
                }
                for (Py_ssize_t k = 0; k < known_count && !coded; k++) {
                    const Text *other = &known[k * width + c];
                    if (other->size == text->size && memcmp(other->data, text->data, (size_t)text->size) == 0) {
                        out[j * width + c] = known_codes[k * width + c];
                        coded = 1;
                    }
                }
            }
            if (!coded) {
                int found = code_of(coder, value, &out[j * width + c], text);
                if (found <= 0)
                    return found;
            }
        }
    }
    codes->length += m * width;
    return 1;
}

/* `size` bytes from `items` as a bytes object, or NULL with an exception. */
static PyObject *
bytes_of(const void *items, Py_ssize_t size)
{
    return PyBytes_FromStringAndSize(size ? (const char *)items : NULL, size);
}

PyObject *
om_tuple_codes(PyObject *module, PyObject *args)
{
    PyObject *rows, *others = Py_None, *result = NULL;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "On|O", &rows, &width, &others))
        return NULL;
    int pair = others != Py_None;
    if ((!PyList_CheckExact(rows) && !PyTuple_CheckExact(rows)) || width < 1 ||
        (pair && ((!PyList_CheckExact(others) && !PyTuple_CheckExact(others)) || length_of(others) != length_of(rows))))
        Py_RETURN_NONE;
    /* `distinct` first: creating it may collect garbage (and so run Python code) before the
     * rows are read; below only it grows (and a str's UTF-8 form may be made): no Python code
     * runs, so the rows, which hold the strings whose bytes the table points to, cannot change. */
    Coder coder = {NULL, 1023, PyList_New(0)};
    Codes codes = {NULL, 0, 0}, other_codes = {NULL, 0, 0};
    Text *texts = NULL, *other_texts = NULL;
    int64_t *sizes = NULL, *other_sizes = NULL;
    Py_ssize_t capacity = 0, n = length_of(rows);
    if (coder.distinct == NULL)
        return NULL;
    coder.slots = PyMem_Calloc(coder.mask + 1, sizeof(Slot));
    sizes = PyMem_Malloc((size_t)(n + 1) * sizeof(int64_t));
    other_sizes = PyMem_Malloc((size_t)(n + 1) * sizeof(int64_t));
    if (coder.slots == NULL || sizes == NULL || other_sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    GetItem row_of = getter_of(rows), other_of = pair ? getter_of(others) : NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_of(rows, i), *other = pair ? other_of(others, i) : NULL;
        if ((!PyList_CheckExact(row) && !PyTuple_CheckExact(row)) ||
            (pair && !PyList_CheckExact(other) && !PyTuple_CheckExact(other)))
            goto not_fast;
        Py_ssize_t m = length_of(row), known = pair ? length_of(other) : 0, most = (m > known ? m : known) * width;
        sizes[i] = m;
        other_sizes[i] = known;
        if (most > capacity) { /* the bytes of one example's tuples, each side */
            capacity = most + 64;
            PyMem_Free(texts);
            PyMem_Free(other_texts);
            texts = PyMem_Malloc((size_t)capacity * sizeof(Text));
            other_texts = PyMem_Malloc((size_t)capacity * sizeof(Text));
            if (texts == NULL || other_texts == NULL) {
                PyErr_NoMemory();
                goto done;
            }
        }
        Py_ssize_t start = other_codes.length;
        int found = pair ? code_row(&coder, other, width, &other_codes, other_texts, NULL, NULL, 0) : 1;
        if (found > 0)
            found = code_row(&coder, row, width, &codes, texts, other_codes.items + start, other_texts, known);
        if (found < 0)
            goto done;
        if (found == 0)
            goto not_fast;
    }
    PyObject *parts[5] = {bytes_of(sizes, n * 8), bytes_of(codes.items, codes.length * 4), NULL, NULL, NULL};
    if (pair) {
        parts[2] = bytes_of(other_sizes, n * 8);
        parts[3] = bytes_of(other_codes.items, other_codes.length * 4);
    }
    if (parts[0] != NULL && parts[1] != NULL && (!pair || (parts[2] != NULL && parts[3] != NULL)))
        result = pair ? PyTuple_Pack(5, parts[0], parts[1], parts[2], parts[3], coder.distinct)
                      : PyTuple_Pack(3, parts[0], parts[1], coder.distinct);
    for (int k = 0; k < 4; k++)
        Py_XDECREF(parts[k]);
    goto done;
not_fast:
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(coder.slots);
    PyMem_Free(texts);
    PyMem_Free(other_texts);
    PyMem_Free(sizes);
    PyMem_Free(other_sizes);
    PyMem_Free(codes.items);
    PyMem_Free(other_codes.items);
    Py_DECREF(coder.distinct);
    return result;
}
