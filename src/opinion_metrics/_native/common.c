/* What the C files share that common.h does not hold inline: a table of rows (Rows) as the
 * tuple of columns the edge functions return, and freed. */
#include "common.h"

/* The columns as a tuple of int64 bytearrays (writable), or NULL with an exception. */
PyObject *
om_rows_as_columns(const Rows *rows)
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

/* Frees the columns (the Rows itself is the caller's). */
void
om_free_rows(Rows *rows)
{
    for (int k = 0; k < rows->width; k++)
        PyMem_Free(rows->columns[k]);
}
