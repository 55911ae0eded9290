/* The optional C helper of opinion_metrics.preparation (built by setup.py when a compiler
 * is present; otherwise preparation does the same in Python, and the tests compare both).
 *
 * encode_lists(lists, table) -> (sizes, codes) or None
 *
 *     sizes = [len(row) for row in lists]
 *     codes = [table.setdefault(keyword, len(table)) for row in lists for keyword in row]
 *
 * returned as the bytes of int64 sizes and uint32 codes, when every row is a list or tuple
 * and every keyword a str (exact types); otherwise None, and `table` may hold some of the
 * keywords. One pass over the keywords in C: no Python call per keyword. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *
encode_lists(PyObject *module, PyObject *args)
{
    PyObject *lists, *table;
    if (!PyArg_ParseTuple(args, "OO!:encode_lists", &lists, &PyDict_Type, &table))
        return NULL;
    PyObject *rows = PySequence_Fast(lists, "encode_lists: lists must be a sequence");
    if (rows == NULL)
        return NULL;
    PyObject *sizes = NULL, *codes = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows), total = 0;
    PyObject **row_items = PySequence_Fast_ITEMS(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_items[i];
        if (!PyList_CheckExact(row) && !PyTuple_CheckExact(row))
            goto not_plain;
        total += PySequence_Fast_GET_SIZE(row);
    }
    sizes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    codes = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(uint32_t));
    if (sizes == NULL || codes == NULL)
        goto fail;
    int64_t *size_of = (int64_t *)PyBytes_AS_STRING(sizes);
    uint32_t *code_of = (uint32_t *)PyBytes_AS_STRING(codes);
    /* No Python code runs below (exact str hash and compare in C; no container allocated),
     * so no row changes size between the two passes. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = row_items[i];
        Py_ssize_t m = PySequence_Fast_GET_SIZE(row);
        PyObject **items = PySequence_Fast_ITEMS(row);
        size_of[i] = m;
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

static PyMethodDef methods[] = {
    {"encode_lists", encode_lists, METH_VARARGS,
     "encode_lists(lists, table) -> (sizes, codes) or None: row sizes (int64 bytes) and each "
     "keyword's code in table, new keywords numbered len(table) on (uint32 bytes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
