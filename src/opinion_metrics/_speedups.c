/* The optional C helper of opinion_metrics.preparation (built by setup.py when a compiler
 * is present; otherwise preparation does the same in Python, and the tests compare both).
 * One pass over the items in C: no Python call per item.
 *
 * encode_lists(lists, table) -> (sizes, codes) or None
 *
 *     sizes = [len(row) for row in lists]
 *     codes = [table.setdefault(keyword, len(table)) for row in lists for keyword in row]
 *
 * returned as the bytes of int64 sizes and uint32 codes, when every row is a list or tuple
 * and every keyword a str (exact types); otherwise None, and `table` may hold some of the
 * keywords. `table` must be a dict of str keys and int values below 2**32 (the library's own
 * tables): then comparing keys runs no Python code, which could change the rows meanwhile.
 *
 * encode_floats(lists) -> (sizes, values) or None
 *
 *     sizes = [len(row) for row in lists]
 *     values = [value for row in lists for value in row]
 *
 * as int64 and float64 bytes, when every row is a list or tuple and every value a float
 * (exact types); otherwise None. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    PyObject **row_items = PySequence_Fast_ITEMS(rows);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyList_CheckExact(row_items[i]) && !PyTuple_CheckExact(row_items[i]))
            return rows;
    *sizes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (*sizes == NULL) {
        Py_DECREF(rows);
        return NULL;
    }
    int64_t *size_of = (int64_t *)PyBytes_AS_STRING(*sizes);
    for (Py_ssize_t i = 0; i < n; i++) {
        size_of[i] = PySequence_Fast_GET_SIZE(row_items[i]);
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
encode_lists(PyObject *module, PyObject *args)
{
    PyObject *lists, *table, *sizes, *codes = NULL;
    Py_ssize_t total;
    if (!PyArg_ParseTuple(args, "OO!:encode_lists", &lists, &PyDict_Type, &table))
        return NULL;
    PyObject *rows = row_sizes(lists, &sizes, &total);
    if (rows == NULL)
        return NULL;
    if (sizes == NULL)
        goto not_plain;
    codes = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(uint32_t));
    if (codes == NULL)
        goto fail;
    uint32_t *code_of = (uint32_t *)PyBytes_AS_STRING(codes);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    PyObject **row_items = PySequence_Fast_ITEMS(rows);
    /* No Python code runs below (exact str hash and compare in C; no container allocated),
     * so no row changes size after it was measured. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_items[i];
        Py_ssize_t m = PySequence_Fast_GET_SIZE(row);
        PyObject **items = PySequence_Fast_ITEMS(row);
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *keyword = items[j];
            if (!PyUnicode_CheckExact(keyword))
                goto not_plain;
            PyObject *known = PyDict_GetItemWithError(table, keyword); /* borrowed */
            Py_ssize_t code;
            if (known != NULL) {
                code = PyLong_AsSsize_t(known);
                if (code == -1 && PyErr_Occurred())
                    goto fail;
            } else {
                if (PyErr_Occurred())
                    goto fail;
                code = PyDict_GET_SIZE(table);
                if ((uint64_t)code > UINT32_MAX)
                    goto not_plain;
                PyObject *number = PyLong_FromSsize_t(code);
                if (number == NULL)
                    goto fail;
                int failed = PyDict_SetItem(table, keyword, number);
                Py_DECREF(number);
                if (failed)
                    goto fail;
            }
            *code_of++ = (uint32_t)code;
        }
    }
    Py_DECREF(rows);
    return Py_BuildValue("(NN)", sizes, codes);
not_plain:
    Py_XDECREF(sizes);
    Py_XDECREF(codes);
    Py_DECREF(rows);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(sizes);
    Py_XDECREF(codes);
    Py_DECREF(rows);
    return NULL;
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
    double *value_of = (double *)PyBytes_AS_STRING(values);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    PyObject **row_items = PySequence_Fast_ITEMS(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_items[i];
        Py_ssize_t m = PySequence_Fast_GET_SIZE(row);
        PyObject **items = PySequence_Fast_ITEMS(row);
        for (Py_ssize_t j = 0; j < m; j++) {
            if (!PyFloat_CheckExact(items[j]))
                goto not_plain;
            *value_of++ = PyFloat_AS_DOUBLE(items[j]);
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

static PyMethodDef methods[] = {
    {"encode_lists", encode_lists, METH_VARARGS,
     "encode_lists(lists, table) -> (sizes, codes) or None: row sizes (int64 bytes) and each "
     "keyword's code in table, new keywords numbered len(table) on (uint32 bytes)."},
    {"encode_floats", encode_floats, METH_O,
     "encode_floats(lists) -> (sizes, values) or None: row sizes (int64 bytes) and the values "
     "(float64 bytes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
