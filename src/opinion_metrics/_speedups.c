/* The optional C helper of opinion_metrics.preparation (built by setup.py when a compiler
 * is present; otherwise preparation does the same in Python, and the tests compare both).
 * One pass over the items in C: no Python call per item.
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
 *
 * contained_pairs(needles, haystacks, block=NEEDLE_BLOCK, how=0)
 *     -> (needle_positions, haystack_positions) or None
 *
 *     every (i, j) with needles[i] in haystacks[j]                    (in no set order)
 *
 * as int64 bytearrays, when both are lists or tuples of str (exact types) that encode to
 * UTF-8 (no lone surrogate); otherwise None. On the UTF-8 bytes (UTF-8 is
 * self-synchronizing: a substring of the bytes is one of the code points). Only the
 * needles whose every pair of adjacent bytes is in a haystack (a bit per pair) are
 * searched, by whichever is cheaper (`how` 0; 1 and 2 force one): Aho-Corasick automata,
 * one pass over the haystacks per block of at most `block` needle bytes whose table of
 * moves stays under AUTOMATON_MOVES (16 MiB: bounded memory), or each window of the
 * haystacks whose width is a needle's looked up by its hash (few, short haystacks: many
 * predictions against a movie's gold keywords).
 *
 * snapshot_rows(rows, limit) -> (items, sizes, starts), False or None
 *
 *     items = tuple(item for r in range(len(rows)) if r == 0 or rows[r] is not rows[r - 1]
 *                   for item in rows[r])
 *     sizes[r] = len(rows[r]), starts[r] = where in `items` the items of rows[r] start
 *
 * as a tuple (holding the items: none is freed and another made at its address meanwhile;
 * the library prepares these frozen items, never the live rows, so a row changed and
 * restored meanwhile is prepared as it was when frozen) and int64 bytes, when `rows` is a
 * tuple of exact lists and tuples whose items are exact str or float (else None: a str
 * subclass may answer differently at each call) and there are at most `limit` items (else
 * False, before any is copied). One tuple, untracked: the collector never visits it.
 *
 * rows_unchanged(rows, kept, items, sizes) -> bool
 *
 *     whether `rows` (a list or tuple) holds the row objects of the tuple `kept`, in order,
 *     each holding the item objects of `(items, sizes, _) = snapshot_rows(kept)`: a corpus
 *     prepared before is given again, unchanged.
 *
 * VERSION: the functions' version; the library ignores a helper built from another one. */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000 /* the stable ABI of Python 3.11: one abi3 wheel per platform */
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The limited API's calls for PySequence_Fast_GET_SIZE / _ITEMS: the size of an exact list
 * or tuple, and the function that gives its item k (borrowed; NULL with IndexError when k is
 * past its end), looked up once per sequence and called per item. */
typedef PyObject *(*GetItem)(PyObject *, Py_ssize_t);

static Py_ssize_t
length_of(PyObject *sequence)
{
    return PyList_CheckExact(sequence) ? PyList_Size(sequence) : PyTuple_Size(sequence);
}

static GetItem
getter_of(PyObject *sequence)
{
    return PyList_CheckExact(sequence) ? PyList_GetItem : PyTuple_GetItem;
}

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

static PyObject *
number_strings(PyObject *module, PyObject *args)
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

/* str's own hash function (the cached hash), called without PyObject_Hash's indirection. */
static hashfunc str_hash;

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

static PyObject *
distinct_codes(PyObject *module, PyObject *lists)
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
            Py_hash_t hash = str_hash(keyword);
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

static PyObject *
row_objects(PyObject *module, PyObject *lists)
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

static PyObject *
encode_floats(PyObject *module, PyObject *lists)
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

static PyObject *
first_occurrences(PyObject *module, PyObject *args)
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

static PyObject *
exact_hits(PyObject *module, PyObject *args)
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

/* A growing table of int64 rows, `width` (2 or 3) columns, each its own array. */
typedef struct {
    int64_t *columns[3];
    int width;
    Py_ssize_t length, capacity;
} Rows;

/* Appends the row (a, b[, c]); 0 with MemoryError. */
static int
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

/* The columns as a tuple of int64 bytearrays (writable), or NULL with an exception. */
static PyObject *
rows_as_columns(const Rows *rows)
{
    PyObject *result = PyTuple_New(rows->width);
    for (int k = 0; result != NULL && k < rows->width; k++) {
        PyObject *column = PyByteArray_FromStringAndSize((const char *)rows->columns[k], rows->length * 8);
        if (column == NULL)
            Py_CLEAR(result);
        else
            PyTuple_SetItem(result, k, column); /* cannot fail: a new tuple's own slot */
    }
    return result;
}

static void
free_rows(Rows *rows)
{
    for (int k = 0; k < rows->width; k++)
        PyMem_Free(rows->columns[k]);
}

static PyObject *
related_edges(PyObject *module, PyObject *args)
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
    result = rows_as_columns(&edges);
done:
    PyMem_Free(marks);
    PyMem_Free(where);
    free_rows(&edges);
    release_views(views, 7);
    return result;
}

/* pair_edges and document_edges: the relation tested on the pairs that meet in a document. */

/* Whether `needle` (nn bytes) occurs in `haystack` (hn bytes); with `tokens`, only
 * where it starts and ends at a token boundary (a space or an end of a canonical token form). */
static int
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

/* A 64-bit set of the bytes of a string (byte % 64): a string holds another only if its set
 * holds the other's. */
static uint64_t
byte_bits(const char *data, Py_ssize_t size)
{
    uint64_t bits = 0;
    for (Py_ssize_t k = 0; k < size; k++)
        bits |= (uint64_t)1 << ((uint8_t)data[k] & 63);
    return bits;
}

/* Whether two non-empty strings are related: equal, or the shorter in the longer (as tokens:
 * both canonical token forms, tokens separated by one space). */
static int
related_strings(const char *a, Py_ssize_t an, const char *b, Py_ssize_t bn, int tokens)
{
    if (an == bn)
        return memcmp(a, b, (size_t)an) == 0;
    return an < bn ? occurs_in(b, bn, a, an, tokens) : occurs_in(a, an, b, bn, tokens);
}

/* The bytes str.split() separates at among ASCII: \t \n \v \f \r \x1c-\x1f and space. */
static int
ascii_space(uint8_t byte)
{
    return byte == ' ' || (byte >= '\t' && byte <= '\r') || (byte >= 0x1c && byte <= 0x1f);
}

/* Whether UTF-8 bytes are a canonical token form: ASCII, tokens separated by one space, no
 * other white space, none at the ends (" ".join(s.split()) == s). */
static int
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

static PyObject *
pair_edges(PyObject *module, PyObject *args)
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
    result = rows_as_columns(&edges);
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
    free_rows(&edges);
    release_views(views, 6);
    if (result == NULL && !plain && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}

/* document_edges: each document's keywords normalized, de-duplicated and related on their own. */

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

#define ARENA_BLOCK ((Py_ssize_t)1 << 16)

/* Room for `size` bytes in the current block (the next one, made or grown, where they do not
 * fit); NULL with MemoryError. The bytes are the arena's once `arena_keep` counts them. */
static char *
arena_room(Arena *a, Py_ssize_t size)
{
    if (a->count > 0 && a->used + size <= a->capacity[a->current])
        return a->blocks[a->current] + a->used;
    Py_ssize_t next = a->count > 0 ? a->current + 1 : 0;
    if (next == a->count) {
        char **blocks = PyMem_Realloc(a->blocks, (size_t)(a->count + 1) * sizeof(char *));
        Py_ssize_t *capacity = blocks == NULL ? NULL : PyMem_Realloc(a->capacity, (size_t)(a->count + 1) * sizeof(Py_ssize_t));
        if (blocks != NULL)
            a->blocks = blocks;
        if (capacity == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        a->capacity = capacity;
        a->blocks[next] = NULL;
        a->capacity[next] = 0;
        a->count++;
    }
    if (a->capacity[next] < size) {
        Py_ssize_t capacity = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        char *block = PyMem_Realloc(a->blocks[next], (size_t)capacity);
        if (block == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        a->blocks[next] = block;
        a->capacity[next] = capacity;
    }
    a->current = next;
    a->used = 0;
    return a->blocks[next];
}

static void
arena_keep(Arena *a, Py_ssize_t size)
{
    a->used += size;
}

static void
arena_rewind(Arena *a)
{
    a->current = 0;
    a->used = 0;
}

static void
arena_free(Arena *a)
{
    for (Py_ssize_t b = 0; b < a->count; b++)
        PyMem_Free(a->blocks[b]);
    PyMem_Free(a->blocks);
    PyMem_Free(a->capacity);
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Up to 8 bytes as a little-endian word, the bytes past `size` taken as 'a' (so that a word
 * of letters stays one). */
static uint64_t
load_word(const char *data, Py_ssize_t size)
{
    uint64_t word = 0x6161616161616161ULL; /* 'a' x 8 */
    if (size >= 8) {
        memcpy(&word, data, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        return word;
    }
    for (Py_ssize_t k = 0; k < size; k++) /* (bytes, not a copy to memory read back as a word) */
        word = (word & ~((uint64_t)0xFF << (8 * k))) | (uint64_t)(uint8_t)data[k] << (8 * k);
    return word;
}

static uint64_t
mix_word(uint64_t hash, uint64_t word)
{
    hash = (hash ^ word) * 0xBF58476D1CE4E5B9ULL;
    return hash ^ (hash >> 29);
}

static uint64_t
finish_hash(uint64_t hash)
{
    hash ^= hash >> 32;
    return hash * 0x94D049BB133111EBULL;
}

/* A hash of the bytes: their words (`load_word`) mixed in turn. */
static uint64_t
hash_bytes(const char *data, Py_ssize_t size)
{
    uint64_t hash = 0x9E3779B97F4A7C15ULL ^ (uint64_t)size;
    for (Py_ssize_t k = 0; k < size; k += 8)
        hash = mix_word(hash, load_word(data + k, size - k));
    return finish_hash(hash);
}

/* The keywords most often given: ASCII letters and single spaces, neither leading nor
 * trailing. Their form, where the normalization lower-cases letters (`lower`) and keeps
 * spaces between words, is their bytes lower-cased: found 8 bytes at a time, hashed on the
 * way (`hash_bytes`), written to `out` (room for `size` + 8 bytes) where a letter is upper
 * case, else left in place (*form = data). Returns 0 for any other keyword. */
static int
letters_and_spaces(const char *data, Py_ssize_t size, int lower, char *out, const char **form, uint64_t *hash)
{
    uint64_t mixed = 0x9E3779B97F4A7C15ULL ^ (uint64_t)size, all_upper = 0, after_space = 1;
    if (size == 0 || data[0] == ' ' || data[size - 1] == ' ')
        return 0;
    for (Py_ssize_t k = 0; k < size; k += 8) {
        uint64_t word = load_word(data + k, size - k);
        if (word & HIGHS)
            return 0;
        uint64_t folded = word | (0x20 * ONES); /* letters in lower case (and other bytes moved) */
        uint64_t letter = ((folded + (0x80 - 'a') * ONES) & ~(folded + (0x80 - 'z' - 1) * ONES)) & HIGHS;
        uint64_t other = word ^ (' ' * ONES); /* a space: 0 */
        uint64_t space = ~((((other & ~HIGHS) + ~HIGHS) | other)) & HIGHS;
        uint64_t upper = letter & ~(word << 2); /* bit 5 clear: upper case */
        if ((letter | space) != HIGHS || (space & ((space << 8) | (after_space >> 56))))
            return 0; /* another byte, or two spaces in a row (here or across words) */
        after_space = space & (HIGHS << 56); /* this word's last byte a space */
        all_upper |= upper;
        if (lower)
            word |= upper >> 2;
        mixed = mix_word(mixed, word);
        if (lower && all_upper) { /* from the first upper-case letter on, the lower-cased bytes */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            uint64_t stored = __builtin_bswap64(word);
#else
            uint64_t stored = word;
#endif
            memcpy(out + k, &stored, 8);
        }
    }
    if (lower && all_upper) {
        Py_ssize_t first = 0; /* the words before the first upper-case letter's, copied as they are */
        while (first < size && !(data[first] >= 'A' && data[first] <= 'Z'))
            first++;
        memcpy(out, data, (size_t)(first & ~(Py_ssize_t)7));
        *form = out;
    } else {
        *form = data;
    }
    *hash = finish_hash(mixed);
    return 1;
}

/* Writes `size` bytes as a token form to `out`: white space runs (ASCII) as one space, none
 * at the ends. Returns the form's length (`size` at most). */
static Py_ssize_t
collapse_spaces(char *out, const char *data, Py_ssize_t size)
{
    Py_ssize_t length = 0;
    int pending = 0;
    for (Py_ssize_t k = 0; k < size; k++) {
        uint8_t byte = (uint8_t)data[k];
        if (ascii_space(byte)) {
            pending = length > 0;
            continue;
        }
        if (pending)
            out[length++] = ' ';
        pending = 0;
        out[length++] = (char)byte;
    }
    return length;
}

/* Whether normalizing the ASCII bytes changes nothing (0 also for bytes of 0x80 and up). */
static int
normalized_already(const Normalization *norm, const uint8_t *data, Py_ssize_t size)
{
    uint8_t bad = 0, previous = 2; /* (as if after a space: none leads) */
    if (norm->collapse) { /* kept bytes, single spaces between them */
        for (Py_ssize_t k = 0; k < size; k++) {
            uint8_t same = norm->same[data[k]];
            bad |= (uint8_t)((same == 0) | ((same & previous) >> 1)); /* (2 & 2: a second space) */
            previous = same;
        }
        return !bad && previous != 2; /* (none trails; an empty keyword is not taken) */
    }
    for (Py_ssize_t k = 0; k < size; k++)
        bad |= (uint8_t)(norm->same[data[k]] == 0);
    return !bad && (size == 0 || (!norm->space[data[0]] && !norm->space[data[size - 1]]));
}

/* Sets `kw`'s token form: its form, or (`make`, where the form may not be canonical) the
 * canonical one, made in the arena where the form is not; 0 with MemoryError. */
static int
set_token_form(Arena *a, Keyword *kw, int make)
{
    kw->token = kw->form;
    kw->token_size = kw->form_size;
    if (make && !canonical_tokens(kw->form, kw->form_size)) {
        char *out = arena_room(a, kw->form_size);
        if (out == NULL)
            return 0;
        kw->token = out;
        kw->token_size = collapse_spaces(out, kw->form, kw->form_size);
        arena_keep(a, kw->token_size);
    }
    return 1;
}

/* Normalizes keyword `raw` (its form, and its token form where `tokens`): 1 done (`*kw` set;
 * an empty form: dropped), 2 a non-ASCII keyword whose forms `known` lacks (added to
 * `missing`), 0 with an exception, or without one (*plain = 0): not an exact str, or a lone
 * surrogate. */
static int
normalize_into(Arena *a, PyObject *raw, const Normalization *norm, int tokens, PyObject *known, PyObject *missing,
               Keyword *kw, int *plain)
{
    Py_ssize_t size;
    const char *data = PyUnicode_CheckExact(raw) ? PyUnicode_AsUTF8AndSize(raw, &size) : NULL;
    if (data == NULL) {
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                return 0;
            PyErr_Clear();
        }
        *plain = 0;
        return 0;
    }
    char *out = arena_room(a, size + 8);
    if (out == NULL)
        return 0;
    if (norm->letters && letters_and_spaces(data, size, norm->lower, out, &kw->form, &kw->hash)) {
        kw->form_size = kw->token_size = size; /* (canonical token forms) */
        kw->token = kw->form;
        if (kw->form == out)
            arena_keep(a, size);
        return 1;
    }
    if (normalized_already(norm, (const uint8_t *)data, size)) { /* its own bytes */
        kw->form = data;
        kw->form_size = size;
        kw->hash = hash_bytes(data, size);
        return set_token_form(a, kw, tokens && !norm->collapse);
    }
    /* Without branches on the bytes (white space is frequent): each byte's replacement is
     * written, the length advanced only over those kept, a space before a kept byte after
     * white space. Bytes of 0x80 and up (not ASCII) are noted and sent to `known` below. */
    Py_ssize_t length = 0, start = 0;
    uint8_t high = 0;
    if (norm->collapse) {
        uint8_t pending = 0;
        for (Py_ssize_t k = 0; k < size; k++) {
            uint8_t byte = (uint8_t)data[k], c = byte & 0x7F, keep = norm->keep[c];
            high |= byte;
            out[length] = ' ';
            length += keep & pending;
            out[length] = (char)norm->map[c];
            length += keep;
            pending = (uint8_t)((pending | (norm->gap[c] & (length > 0))) & !keep);
        }
    } else {
        for (Py_ssize_t k = 0; k < size; k++) {
            uint8_t byte = (uint8_t)data[k], c = byte & 0x7F;
            high |= byte;
            out[length] = (char)norm->map[c];
            length += norm->map[c] != DELETED;
        }
        while (length > 0 && norm->space[(uint8_t)out[length - 1]]) /* stripped */
            length--;
        while (start < length && norm->space[(uint8_t)out[start]])
            start++;
    }
    if (high & 0x80) { /* not ASCII: the forms Python computed (the string keeps their bytes) */
        PyObject *forms = PyDict_GetItemWithError(known, raw); /* borrowed; exact str keys: no Python code */
        if (forms == NULL) {
            if (PyErr_Occurred() || PyList_Append(missing, raw) < 0)
                return 0;
            return 2;
        }
        const char *form = NULL, *token = NULL;
        if (PyTuple_CheckExact(forms) && PyTuple_Size(forms) == 2) {
            form = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(forms, 0), &kw->form_size);
            token = form == NULL ? NULL : PyUnicode_AsUTF8AndSize(PyTuple_GetItem(forms, 1), &kw->token_size);
        }
        if (token == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "known forms must be (form, token form) pairs of str");
            return 0;
        }
        kw->form = form;
        kw->token = token;
        kw->hash = hash_bytes(form, kw->form_size);
        return 1;
    }
    arena_keep(a, length);
    kw->form = out + start;
    kw->form_size = length - start;
    kw->hash = hash_bytes(kw->form, kw->form_size);
    return set_token_form(a, kw, tokens && !norm->collapse);
}

/* Asks the processor to fetch an object's memory ahead of its use (where the compiler can). */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

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

/* A set of keyword numbers by their forms' hashes, emptied in O(1) (slots stamped). */
typedef struct {
    int32_t *number;
    uint32_t *stamp;
    size_t mask;
    uint32_t now;
} KeywordSet;

/* Empties the set, with room for `count` keywords; 0 with MemoryError. */
static int
set_clear(KeywordSet *s, Py_ssize_t count)
{
    if (s->number == NULL || (size_t)count * 2 > s->mask + 1) {
        size_t slots = 64;
        while (slots < (size_t)count * 2)
            slots <<= 1;
        PyMem_Free(s->number);
        PyMem_Free(s->stamp);
        s->number = PyMem_Malloc(slots * sizeof(int32_t));
        s->stamp = PyMem_Calloc(slots, sizeof(uint32_t));
        if (s->number == NULL || s->stamp == NULL) {
            PyErr_NoMemory();
            return 0;
        }
        s->mask = slots - 1;
        s->now = 0;
    }
    if (++s->now == 0) {
        memset(s->stamp, 0, (s->mask + 1) * sizeof(uint32_t));
        s->now = 1;
    }
    return 1;
}

/* The number of the keyword in the set whose form equals `kw`'s, or -1 (then `kw` is added as
 * `number` if number >= 0). */
static int32_t
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

/* Normalizes a row of keywords into `kept` (room for all), dropping empty and repeated forms;
 * returns how many are kept, -1 with an exception or not plain, -2 if some are missing. */
static Py_ssize_t
keep_row(PyObject *row, Arena *a, const Normalization *norm, int match, PyObject *known, PyObject *missing,
         KeywordSet *seen, Keyword *kept, int *plain)
{
    Py_ssize_t m = length_of(row), count = 0;
    GetItem keyword_of = getter_of(row);
    int incomplete = 0;
    if (!set_clear(seen, m))
        return -1;
    for (Py_ssize_t k = 0; k < m; k++) {
        if (k + 4 < m) /* the keywords are read one after the other: their objects fetched ahead */
            PREFETCH(keyword_of(row, k + 4));
        int status = normalize_into(a, keyword_of(row, k), norm, match == 2, known, missing, &kept[count], plain);
        if (status == 0)
            return -1;
        if (status == 2 || incomplete) {
            incomplete = 1;
            continue;
        }
        Keyword *kw = &kept[count];
        if (kw->form_size > 0 && set_find(seen, kept, kw, (int32_t)count) < 0) {
            if (match != 0) /* (exact compares forms: no bits) */
                kw->bits = match == 2 ? byte_bits(kw->token, kw->token_size) : byte_bits(kw->form, kw->form_size);
            count++;
        }
    }
    return incomplete ? -2 : count;
}

static PyObject *
document_edges(PyObject *module, PyObject *args)
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
    if (table.len != 128 || spaces.len != 128) {
        PyErr_SetString(PyExc_ValueError, "the tables have one byte per ASCII character");
        goto done;
    }
    Normalization norm = {table.buf, spaces.buf, collapse, {0}, {0}, {0}, 1, 1};
    for (int c = 0; c < 128; c++) {
        if (norm.map[c] >= 0x80 && norm.map[c] != DELETED) {
            PyErr_SetString(PyExc_ValueError, "a byte is replaced by a byte that is not ASCII");
            goto done;
        }
        norm.gap[c] = norm.map[c] != DELETED && norm.space[norm.map[c]];
        norm.keep[c] = norm.map[c] != DELETED && !norm.gap[c];
        norm.same[c] = norm.map[c] != c ? 0 : !collapse || norm.keep[c] ? 1 : c == ' ' ? 2 : 0;
    }
    /* letters_and_spaces holds where letters are kept, lower-cased (or all as they are),
     * and a space is white space kept between words. */
    norm.lower = norm.map['A'] == 'a';
    for (int c = 'A'; c <= 'z'; c++)
        if ((c <= 'Z' || c >= 'a') && norm.map[c] != (c <= 'Z' && norm.lower ? c + 32 : c))
            norm.letters = 0;
    if (norm.map[' '] != ' ' || !norm.space[' '])
        norm.letters = 0;
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
        arena_rewind(&arena);
        Py_ssize_t g_count = keep_row(gold_row, &arena, &norm, match, known, missing, &gold_set, gold_kept, &plain);
        if (g_count == -1)
            goto done;
        Py_ssize_t p_count = keep_row(predicted_row, &arena, &norm, match, known, missing, &prediction_set,
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
    PyObject *columns = rows_as_columns(&edges);
    if (columns != NULL)
        result = Py_BuildValue("(OON)", prediction_sizes, gold_sizes, columns);
done:
    PyBuffer_Release(&table);
    PyBuffer_Release(&spaces);
    arena_free(&arena);
    PyMem_Free(gold_set.number);
    PyMem_Free(gold_set.stamp);
    PyMem_Free(prediction_set.number);
    PyMem_Free(prediction_set.stamp);
    PyMem_Free(gold_kept);
    PyMem_Free(predicted_kept);
    free_rows(&edges);
    Py_XDECREF(missing);
    Py_XDECREF(prediction_sizes);
    Py_XDECREF(gold_sizes);
    if (result == NULL && !plain && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}

/* contained_pairs: Aho-Corasick automata over the needles' UTF-8 bytes. */

#define NEEDLE_BLOCK ((Py_ssize_t)1 << 22)
#define AUTOMATON_MOVES ((Py_ssize_t)1 << 22) /* nodes x byte classes held at once */

typedef struct {
    int32_t *move;         /* [node * classes + class]: the next node (fail links folded in) */
    int32_t *output;       /* nearest node on the fail chain that ends a needle (0: none) */
    Py_ssize_t *ends_here; /* first needle ending at the node (-1: none); more by next_same */
    Py_ssize_t nodes;
} Automaton;

static void
free_automaton(Automaton *a)
{
    PyMem_Free(a->move);
    PyMem_Free(a->output);
    PyMem_Free(a->ends_here);
    memset(a, 0, sizeof(*a));
}

/* The automaton of the needles numbered which[0:count] (their UTF-8 bytes `data`, `size`,
 * summing to `bytes`), bytes read as their `class_of` (0: in no needle) of `classes`; or 0
 * with MemoryError. */
static int
build_automaton(Automaton *a, const char *const *data, const Py_ssize_t *size, const Py_ssize_t *which,
                Py_ssize_t count, Py_ssize_t bytes, const uint8_t *class_of, int classes, Py_ssize_t *next_same)
{
    Py_ssize_t capacity = bytes + 1;
    memset(a, 0, sizeof(*a));
    int32_t *fail = PyMem_Malloc((size_t)capacity * sizeof(int32_t));
    int32_t *queue = PyMem_Malloc((size_t)capacity * sizeof(int32_t));
    a->move = PyMem_Calloc((size_t)capacity * (size_t)classes, sizeof(int32_t));
    a->output = PyMem_Malloc((size_t)capacity * sizeof(int32_t));
    a->ends_here = PyMem_Malloc((size_t)capacity * sizeof(Py_ssize_t));
    if (!fail || !queue || !a->move || !a->output || !a->ends_here) {
        PyMem_Free(fail);
        PyMem_Free(queue);
        free_automaton(a);
        PyErr_NoMemory();
        return 0;
    }
    a->nodes = 1;
    a->ends_here[0] = -1;
    for (Py_ssize_t w = 0; w < count; w++) { /* the trie: a node's children in its row */
        Py_ssize_t i = which[w];
        int32_t node = 0;
        for (Py_ssize_t k = 0; k < size[i]; k++) {
            int32_t *next = &a->move[(Py_ssize_t)node * classes + class_of[(uint8_t)data[i][k]]];
            if (*next == 0) {
                *next = (int32_t)a->nodes++;
                a->ends_here[*next] = -1;
            }
            node = *next;
        }
        next_same[i] = a->ends_here[node];
        a->ends_here[node] = i;
    }
    /* Breadth first: a node's row is its children, the rest filled from its fail node's row
     * (shallower: complete). The row of class 0 stays 0 (the root). */
    Py_ssize_t head = 0, tail = 1;
    queue[0] = 0;
    fail[0] = 0;
    a->output[0] = 0;
    while (head < tail) {
        int32_t node = queue[head++];
        int32_t *row = &a->move[(Py_ssize_t)node * classes];
        const int32_t *fail_row = &a->move[(Py_ssize_t)fail[node] * classes];
        for (int c = 1; c < classes; c++) {
            int32_t child = row[c];
            if (child == 0) {
                row[c] = node == 0 ? 0 : fail_row[c];
                continue;
            }
            int32_t to = node == 0 ? 0 : fail_row[c];
            fail[child] = to;
            a->output[child] = (to != 0 && a->ends_here[to] >= 0) ? to : a->output[to];
            queue[tail++] = child;
        }
    }
    PyMem_Free(fail);
    PyMem_Free(queue);
    return 1;
}

/* The UTF-8 bytes of each item of `sequence` (borrowed from the strings), or 0: with an
 * exception, or without one (*plain = 0) when an item is not an exact str or holds a lone
 * surrogate. */
static int
utf8_items(PyObject *sequence, Py_ssize_t n, const char **data, Py_ssize_t *size, int *plain)
{
    GetItem item_of = getter_of(sequence);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = item_of(sequence, i);
        if (item == NULL || !PyUnicode_CheckExact(item) || (data[i] = PyUnicode_AsUTF8AndSize(item, &size[i])) == NULL) {
            if (PyErr_Occurred()) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                    return 0;
                PyErr_Clear();
            }
            *plain = 0;
            return 0;
        }
    }
    return 1;
}

/* The pairs of the needles numbered which[0:count] by their hashes: every window of a
 * haystack whose width is a needle's is hashed (prefix hashes) and looked up among the
 * needles' (confirmed byte by byte). Costs a window per (start, width): for few, short
 * haystacks. 0 with MemoryError. */
static int
pairs_by_windows(const char *const *data, const Py_ssize_t *size, Py_ssize_t n, Py_ssize_t m,
                 const Py_ssize_t *which, Py_ssize_t count, Py_ssize_t *next_same, Py_ssize_t *last,
                 Rows *pairs)
{
    const uint64_t base = 0x100000001B3ULL;
    Py_ssize_t longest = 0, empty = -1;
    for (Py_ssize_t j = 0; j < m; j++)
        longest = size[n + j] > longest ? size[n + j] : longest;
    size_t slots = 16;
    while (slots < 2 * (size_t)count)
        slots <<= 1;
    size_t mask = slots - 1;
    int ok = 0;
    uint64_t *hashes = PyMem_Malloc(slots * sizeof(uint64_t));
    Py_ssize_t *heads = PyMem_Malloc(slots * sizeof(Py_ssize_t));
    uint8_t *is_width = PyMem_Calloc((size_t)longest + 1, 1);
    Py_ssize_t *widths = PyMem_Malloc(((size_t)longest + 1) * sizeof(Py_ssize_t));
    uint64_t *powers = PyMem_Malloc(((size_t)longest + 1) * sizeof(uint64_t));
    uint64_t *prefix = PyMem_Malloc(((size_t)longest + 1) * sizeof(uint64_t));
    if (!hashes || !heads || !is_width || !widths || !powers || !prefix) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t slot = 0; slot < slots; slot++)
        heads[slot] = -1;
    for (Py_ssize_t w = 0; w < count; w++) { /* the needles' table; equal needles chained */
        Py_ssize_t i = which[w], width = size[i];
        const uint8_t *needle = (const uint8_t *)data[i];
        if (width == 0) {
            next_same[i] = empty;
            empty = i;
            continue;
        }
        if (width > longest)
            continue;
        uint64_t hash = 0;
        for (Py_ssize_t k = 0; k < width; k++)
            hash = hash * base + needle[k];
        size_t slot = (size_t)((hash * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
        while (heads[slot] >= 0 && !(hashes[slot] == hash && size[heads[slot]] == width &&
                                     memcmp(data[heads[slot]], needle, (size_t)width) == 0))
            slot = (slot + 1) & mask;
        next_same[i] = heads[slot];
        hashes[slot] = hash;
        heads[slot] = i;
        is_width[width] = 1;
    }
    Py_ssize_t n_widths = 0;
    for (Py_ssize_t width = 1; width <= longest; width++)
        if (is_width[width])
            widths[n_widths++] = width;
    powers[0] = 1;
    for (Py_ssize_t k = 1; k <= longest; k++)
        powers[k] = powers[k - 1] * base;
    for (Py_ssize_t j = 0; j < m; j++) {
        const uint8_t *text = (const uint8_t *)data[n + j];
        Py_ssize_t length = size[n + j];
        for (Py_ssize_t i = empty; i >= 0; i = next_same[i])
            if (!add_row(pairs, i, j, 0))
                goto done;
        prefix[0] = 0;
        for (Py_ssize_t k = 0; k < length; k++)
            prefix[k + 1] = prefix[k] * base + text[k];
        for (Py_ssize_t w = 0; w < n_widths && widths[w] <= length; w++) {
            Py_ssize_t width = widths[w];
            for (Py_ssize_t start = 0; start + width <= length; start++) {
                uint64_t hash = prefix[start + width] - prefix[start] * powers[width];
                size_t slot = (size_t)((hash * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
                for (; heads[slot] >= 0; slot = (slot + 1) & mask) {
                    Py_ssize_t i = heads[slot];
                    if (hashes[slot] != hash || size[i] != width || memcmp(data[i], text + start, (size_t)width) != 0)
                        continue;
                    for (; i >= 0; i = next_same[i])
                        if (last[i] != j) {
                            last[i] = j;
                            if (!add_row(pairs, i, j, 0))
                                goto done;
                        }
                    break;
                }
            }
        }
    }
    ok = 1;
done:
    PyMem_Free(hashes);
    PyMem_Free(heads);
    PyMem_Free(is_width);
    PyMem_Free(widths);
    PyMem_Free(powers);
    PyMem_Free(prefix);
    return ok;
}

/* The bytes' classes for automata over the needles numbered which[0:count]: 1, 2, ... for
 * the bytes they hold, 0 for the others. Returns the number of classes. */
static int
byte_classes(const char *const *data, const Py_ssize_t *size, const Py_ssize_t *which, Py_ssize_t count,
             uint8_t *class_of)
{
    int classes = 1;
    memset(class_of, 0, 256);
    for (Py_ssize_t w = 0; w < count; w++)
        for (Py_ssize_t k = 0; k < size[which[w]] && classes < 256; k++) {
            uint8_t byte = (uint8_t)data[which[w]][k];
            if (class_of[byte] == 0)
                class_of[byte] = (uint8_t)classes++;
        }
    return classes; /* (at most 244: UTF-8 never holds the bytes 0xC0, 0xC1, 0xF5 to 0xFF) */
}

/* How many needle bytes an automaton holds: `block` at most, its moves under AUTOMATON_MOVES. */
static Py_ssize_t
automaton_bytes(Py_ssize_t block, int classes)
{
    Py_ssize_t most = AUTOMATON_MOVES / classes - 1;
    return block < most ? block : most;
}

/* The pairs of the needles numbered which[0:count] by Aho-Corasick automata on the bytes'
 * `classes` (`byte_classes`), one per block of needles (one needle at least;
 * `automaton_bytes` bytes at most); 0 with an exception, or without one (*plain = 0) for a
 * needle too long for one automaton. */
static int
pairs_by_automata(const char *const *data, const Py_ssize_t *size, Py_ssize_t n, Py_ssize_t m,
                  const Py_ssize_t *which, Py_ssize_t count, Py_ssize_t block, const uint8_t *class_of, int classes,
                  Py_ssize_t *next_same, Py_ssize_t *last, Rows *pairs, int *plain)
{
    block = automaton_bytes(block, classes);
    Automaton a;
    memset(&a, 0, sizeof(a));
    for (Py_ssize_t first = 0; first < count;) {
        Py_ssize_t stop = first, bytes = 0;
        while (stop < count && (stop == first || bytes + size[which[stop]] <= block))
            bytes += size[which[stop++]];
        if (bytes > automaton_bytes(INT32_MAX, classes)) { /* one needle longer than a block */
            *plain = 0;
            return 0;
        }
        if (!build_automaton(&a, data, size, which + first, stop - first, bytes, class_of, classes, next_same))
            return 0;
        for (Py_ssize_t j = 0; j < m; j++) {
            const uint8_t *text = (const uint8_t *)data[n + j];
            for (Py_ssize_t i = a.ends_here[0]; i >= 0; i = next_same[i]) /* the empty needle */
                if (!add_row(pairs, i, j, 0))
                    goto fail;
            int32_t state = 0;
            for (Py_ssize_t k = 0; k < size[n + j]; k++) {
                state = a.move[(Py_ssize_t)state * classes + class_of[text[k]]];
                /* the needles ending here, until one reported in this haystack (and so its chain) */
                int32_t v = a.ends_here[state] >= 0 ? state : a.output[state];
                for (; v != 0 && last[a.ends_here[v]] != j; v = a.output[v])
                    for (Py_ssize_t i = a.ends_here[v]; i >= 0; i = next_same[i])
                        if (last[i] != j) {
                            last[i] = j;
                            if (!add_row(pairs, i, j, 0))
                                goto fail;
                        }
            }
        }
        free_automaton(&a);
        first = stop;
    }
    return 1;
fail:
    free_automaton(&a);
    return 0;
}

static PyObject *
contained_pairs(PyObject *module, PyObject *args)
{
    PyObject *needle_list, *haystack_list, *result = NULL;
    Py_ssize_t block = NEEDLE_BLOCK;
    int how = 0;
    if (!PyArg_ParseTuple(args, "OO|ni:contained_pairs", &needle_list, &haystack_list, &block, &how))
        return NULL;
    if ((!PyList_CheckExact(needle_list) && !PyTuple_CheckExact(needle_list)) ||
        (!PyList_CheckExact(haystack_list) && !PyTuple_CheckExact(haystack_list)))
        Py_RETURN_NONE;
    Py_ssize_t n = length_of(needle_list), m = length_of(haystack_list);
    const char **data = PyMem_Malloc((size_t)(n + m + 1) * sizeof(char *));
    Py_ssize_t *size = PyMem_Malloc((size_t)(n + m + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *next_same = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *last = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Rows pairs = {{NULL, NULL, NULL}, 2, 0, 0};
    uint8_t *pairs_in = NULL;
    Py_ssize_t *candidates = NULL;
    int plain = 1;
    if (data == NULL || size == NULL || next_same == NULL || last == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* No Python code runs below: the sequences do not change meanwhile. */
    if (!utf8_items(needle_list, n, data, size, &plain) || !utf8_items(haystack_list, m, data + n, size + n, &plain))
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        last[i] = -1;
    /* Candidates: the needles whose every byte pair (or byte) is one of the haystacks'. */
    pairs_in = PyMem_Calloc(65536 / 8, 1);
    candidates = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    if (pairs_in == NULL || candidates == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint8_t bytes_in[256 / 8] = {0};
    double needle_bytes = 0, haystack_bytes = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        needle_bytes += (double)size[i];
    for (Py_ssize_t j = 0; j < m; j++)
        haystack_bytes += (double)size[n + j];
    for (Py_ssize_t j = 0; needle_bytes * 8 > haystack_bytes && j < m; j++) { /* (a few needles: all kept) */
        const uint8_t *text = (const uint8_t *)data[n + j];
        for (Py_ssize_t k = 0; k < size[n + j]; k++) {
            bytes_in[text[k] >> 3] |= (uint8_t)(1 << (text[k] & 7));
            if (k + 1 < size[n + j]) {
                unsigned pair = (unsigned)text[k] << 8 | text[k + 1];
                pairs_in[pair >> 3] |= (uint8_t)(1 << (pair & 7));
            }
        }
    }
    Py_ssize_t n_candidates = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *needle = (const uint8_t *)data[i];
        if (needle_bytes * 8 <= haystack_bytes) {
            candidates[n_candidates++] = i;
            continue;
        }
        int possible = size[i] != 1 || (bytes_in[needle[0] >> 3] >> (needle[0] & 7) & 1);
        for (Py_ssize_t k = 0; possible && k + 1 < size[i]; k++) {
            unsigned pair = (unsigned)needle[k] << 8 | needle[k + 1];
            possible = pairs_in[pair >> 3] >> (pair & 7) & 1;
        }
        if (possible)
            candidates[n_candidates++] = i;
    }
    /* Comparable costs (about ns): a window per (start, width) of the haystacks; an automaton
     * node per needle byte (a row of moves), then a step per haystack byte per automaton. */
    uint8_t class_of[256];
    int classes = byte_classes(data, size, candidates, n_candidates, class_of);
    double windows = 0, candidate_bytes = 0;
    Py_ssize_t longest_needle = 0;
    for (Py_ssize_t c = 0; c < n_candidates; c++) {
        candidate_bytes += (double)size[candidates[c]];
        longest_needle = size[candidates[c]] > longest_needle ? size[candidates[c]] : longest_needle;
    }
    double automata = ceil(candidate_bytes / (double)automaton_bytes(block > 0 ? block : 1, classes));
    double automaton = longest_needle > automaton_bytes(INT32_MAX, classes)
                           ? INFINITY
                           : (20.0 + 0.5 * classes) * candidate_bytes + 3.0 * haystack_bytes * automata;
    uint8_t *is_width = PyMem_Calloc((size_t)longest_needle + 1, 1);
    if (is_width == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < n_candidates; c++)
        is_width[size[candidates[c]]] = 1;
    for (Py_ssize_t j = 0; j < m; j++) {
        for (Py_ssize_t width = 1; width <= longest_needle && width <= size[n + j]; width++)
            if (is_width[width])
                windows += 5.0 * (double)(size[n + j] - width + 1);
    }
    PyMem_Free(is_width);
    int found = (how == 2 || (how == 0 && windows < automaton))
                    ? pairs_by_windows(data, size, n, m, candidates, n_candidates, next_same, last, &pairs)
                    : pairs_by_automata(data, size, n, m, candidates, n_candidates, block, class_of, classes,
                                        next_same, last, &pairs, &plain);
    if (!found)
        goto done;
    result = rows_as_columns(&pairs);
done:
    PyMem_Free(pairs_in);
    PyMem_Free(candidates);
    PyMem_Free(data);
    PyMem_Free(size);
    PyMem_Free(next_same);
    PyMem_Free(last);
    free_rows(&pairs);
    if (result == NULL && !plain && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}

static PyObject *
snapshot_rows(PyObject *module, PyObject *args)
{
    PyObject *rows, *previous = NULL;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "On:snapshot_rows", &rows, &limit))
        return NULL;
    if (!PyTuple_CheckExact(rows))
        Py_RETURN_NONE;
    Py_ssize_t n = PyTuple_Size(rows), total = 0, at = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *row = PyTuple_GetItem(rows, r);
        if (!PyList_CheckExact(row) && !PyTuple_CheckExact(row))
            Py_RETURN_NONE;
        if (row != previous)
            total += length_of(row);
        previous = row;
    }
    if (total > limit)
        Py_RETURN_FALSE;
    /* No collection while copying (up to 3.11 one may run inside PyTuple_New), so no Python
     * code runs and no row changes; each size is read again and each item checked anyway. */
    int collecting = PyGC_Disable();
    PyObject *sizes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *starts = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *items = PyTuple_New(total), *result = NULL;
    if (sizes == NULL || starts == NULL || items == NULL)
        goto done;
    int64_t *size_of = (int64_t *)PyBytes_AsString(sizes), *start_of = (int64_t *)PyBytes_AsString(starts);
    previous = NULL;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *row = PyTuple_GetItem(rows, r);
        if (row == previous) { /* the row before it again: its items once */
            size_of[r] = size_of[r - 1];
            start_of[r] = start_of[r - 1];
            continue;
        }
        previous = row;
        Py_ssize_t m = length_of(row);
        size_of[r] = m;
        start_of[r] = at;
        if (m > total - at)
            goto not_plain;
        GetItem item_of = getter_of(row);
        for (Py_ssize_t k = 0; k < m; k++) {
            PyObject *item = item_of(row, k);
            if (item == NULL || (!PyUnicode_CheckExact(item) && !PyFloat_CheckExact(item)))
                goto not_plain;
            Py_INCREF(item);
            PyTuple_SetItem(items, at++, item); /* cannot fail: a new tuple's own slot */
        }
    }
    if (at != total)
        goto not_plain;
    PyObject_GC_UnTrack(items); /* str and float only */
    result = PyTuple_Pack(3, items, sizes, starts);
    goto done;
not_plain:
    PyErr_Clear();
    result = Py_None;
    Py_INCREF(result);
done:
    if (collecting)
        PyGC_Enable();
    Py_XDECREF(sizes);
    Py_XDECREF(starts);
    Py_XDECREF(items);
    return result;
}

static PyObject *
rows_unchanged(PyObject *module, PyObject *args)
{
    PyObject *rows, *kept, *items, *sizes;
    if (!PyArg_ParseTuple(args, "OO!O!O!:rows_unchanged", &rows, &PyTuple_Type, &kept, &PyTuple_Type, &items,
                          &PyBytes_Type, &sizes))
        return NULL;
    if (!PyList_CheckExact(rows) && !PyTuple_CheckExact(rows))
        Py_RETURN_FALSE;
    Py_ssize_t n = length_of(rows), total = PyTuple_Size(items), at = 0;
    if (n != PyTuple_Size(kept) || PyBytes_Size(sizes) != n * (Py_ssize_t)sizeof(int64_t))
        Py_RETURN_FALSE;
    const int64_t *size_of = (const int64_t *)PyBytes_AsString(sizes);
    /* Only pointers are compared: no Python code runs, so nothing changes meanwhile. */
    GetItem row_of = getter_of(rows);
    PyObject *previous = NULL;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *row = row_of(rows, r);
        if (row != PyTuple_GetItem(kept, r) || (!PyList_CheckExact(row) && !PyTuple_CheckExact(row)))
            Py_RETURN_FALSE;
        if (row == previous) /* the row before it again, as when frozen: compared */
            continue;
        previous = row;
        Py_ssize_t m = size_of[r];
        if (m < 0 || m > total - at || length_of(row) != m)
            Py_RETURN_FALSE;
        GetItem item_of = getter_of(row);
        for (Py_ssize_t k = 0; k < m; k++)
            if (item_of(row, k) != PyTuple_GetItem(items, at++))
                Py_RETURN_FALSE;
    }
    return PyBool_FromLong(at == total);
}

static PyMethodDef methods[] = {
    {"number_strings", number_strings, METH_VARARGS,
     "number_strings(strings, table) -> codes or None: each string's number in table, new strings "
     "numbered len(table) on (uint32 bytes)."},
    {"distinct_codes", distinct_codes, METH_O,
     "distinct_codes(lists) -> (sizes, codes, distinct) or None: row sizes (int64 bytes), each "
     "keyword's number among the distinct keywords (uint32 bytes), the distinct keywords."},
    {"row_objects", row_objects, METH_O,
     "row_objects(lists) -> (numbers, first) or None: each row's number among the distinct row objects in order of "
     "first appearance, and where each first appears (int64 bytes)."},
    {"encode_floats", encode_floats, METH_O,
     "encode_floats(lists) -> (sizes, values) or None: row sizes (int64 bytes) and the values "
     "(float64 bytes)."},
    {"first_occurrences", first_occurrences, METH_VARARGS,
     "first_occurrences(ids, offsets, size) -> keep (bytes of 0 / 1) or None when all are kept."},
    {"exact_hits", exact_hits, METH_VARARGS,
     "exact_hits(predicted, prediction_offsets, gold, gold_offsets, lists, cutoffs, size) -> hits "
     "(int64 bytes)."},
    {"related_edges", related_edges, METH_VARARGS,
     "related_edges(predicted, prediction_offsets, gold, gold_offsets, lists, starts, related, size, by) -> "
     "(examples, predictions, gold_positions) (int64 bytearrays)."},
    {"pair_edges", pair_edges, METH_VARARGS,
     "pair_edges(strings, predicted, prediction_offsets, gold, gold_offsets, lists, order, match) -> (examples, "
     "predictions, gold_positions) (int64 bytearrays) or None: the relation (1 substring, 2 token) tested on each "
     "example's (prediction, gold keyword) pairs, once per (prediction, list) along `order`."},
    {"document_edges", document_edges, METH_VARARGS,
     "document_edges(predictions, references, table, spaces, collapse, match, known) -> (prediction_sizes, "
     "gold_sizes, (examples, predictions, gold_positions)), a list of keywords missing from known, or None."},
    {"contained_pairs", contained_pairs, METH_VARARGS,
     "contained_pairs(needles, haystacks, block=4194304, how=0) -> (needle_positions, haystack_positions) "
     "(int64 bytearrays) or None: every (i, j) with needles[i] in haystacks[j]; how 1: by automata over "
     "blocks of `block` needle bytes, 2: by hashed windows, 0: the cheaper."},
    {"snapshot_rows", snapshot_rows, METH_VARARGS,
     "snapshot_rows(rows, limit) -> (items, sizes, starts), False (over limit items) or None: the rows' items "
     "(exact str or float) in one tuple, a row given again right after itself once, each row's size and where its "
     "items start (int64 bytes)."},
    {"rows_unchanged", rows_unchanged, METH_VARARGS,
     "rows_unchanged(rows, kept, items, sizes) -> bool: whether rows are the row objects kept, holding the items "
     "snapshot_rows(kept) froze."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    str_hash = (hashfunc)PyType_GetSlot(&PyUnicode_Type, Py_tp_hash);
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddIntConstant(created, "VERSION", 6) < 0)
        Py_CLEAR(created);
    return created;
}
