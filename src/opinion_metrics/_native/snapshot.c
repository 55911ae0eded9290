/* Kept corpora: the rows' items frozen in one tuple, and the check that a corpus given again
 * is the one frozen, for opinion_metrics.core.corpus_cache.
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
 */
#include "common.h"

PyObject *
om_snapshot_rows(PyObject *module, PyObject *args)
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

PyObject *
om_rows_unchanged(PyObject *module, PyObject *args)
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
