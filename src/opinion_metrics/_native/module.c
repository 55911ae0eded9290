/* The optional C helper of opinion_metrics.core (built by setup.py when a compiler is
 * present; otherwise the library does the same in Python, and the tests compare both: the
 * switch in opinion_metrics._native chooses). One pass over the items in C: no Python call per item.
 *
 * One extension module, opinion_metrics._native._speedups, on Python 3.11's limited API,
 * compiled from these files (each function documented in its file; common.h the shared
 * declarations):
 *
 *     module.c         this file: the method table, the module's creation, VERSION
 *     interning.c      distinct_codes, number_strings, row_objects, encode_floats
 *     edges.c          first_occurrences, exact_hits, related_edges, pair_edges
 *     documents.c      document_edges (normalization.c: each document's keywords kept;
 *                      documents.h what the two share)
 *     containment.c    contained_pairs
 *     snapshot.c       snapshot_rows, rows_unchanged
 *     tuple_matching.c membership_hits, exact_tuple_counts
 *     tuples.c         tuple_codes
 *     common.c         the tables of rows the edge functions return
 *
 * VERSION: the functions' version; the library ignores a helper built from another one. */
#include "common.h"

static PyMethodDef methods[] = {
    {"number_strings", om_number_strings, METH_VARARGS,
     "number_strings(strings, table) -> codes or None: each string's number in table, new strings "
     "numbered len(table) on (uint32 bytes)."},
    {"distinct_codes", om_distinct_codes, METH_O,
     "distinct_codes(lists) -> (sizes, codes, distinct) or None: row sizes (int64 bytes), each "
     "keyword's number among the distinct keywords (uint32 bytes), the distinct keywords."},
    {"row_objects", om_row_objects, METH_O,
     "row_objects(lists) -> (numbers, first) or None: each row's number among the distinct row objects in order of "
     "first appearance, and where each first appears (int64 bytes)."},
    {"encode_floats", om_encode_floats, METH_O,
     "encode_floats(lists) -> (sizes, values) or None: row sizes (int64 bytes) and the values "
     "(float64 bytes)."},
    {"first_occurrences", om_first_occurrences, METH_VARARGS,
     "first_occurrences(ids, offsets, size) -> keep (bytes of 0 / 1) or None when all are kept."},
    {"exact_hits", om_exact_hits, METH_VARARGS,
     "exact_hits(predicted, prediction_offsets, gold, gold_offsets, lists, cutoffs, size) -> hits "
     "(int64 bytes)."},
    {"related_edges", om_related_edges, METH_VARARGS,
     "related_edges(predicted, prediction_offsets, gold, gold_offsets, lists, starts, related, size, by) -> "
     "(examples, predictions, gold_positions) (int64 bytearrays)."},
    {"pair_edges", om_pair_edges, METH_VARARGS,
     "pair_edges(strings, predicted, prediction_offsets, gold, gold_offsets, lists, order, match) -> (examples, "
     "predictions, gold_positions) (int64 bytearrays) or None: the relation (1 substring, 2 token) tested on each "
     "example's (prediction, gold keyword) pairs, once per (prediction, list) along `order`."},
    {"document_edges", om_document_edges, METH_VARARGS,
     "document_edges(predictions, references, table, spaces, collapse, match, known, per_byte=inf, fixed=inf) -> "
     "(prediction_sizes, gold_sizes, (examples, predictions, gold_positions)), a list of keywords missing from known, "
     "or None; a document of p predictions and g gold keywords of b bytes with p * g > per_byte * b + fixed searched."},
    {"contained_pairs", om_contained_pairs, METH_VARARGS,
     "contained_pairs(needles, haystacks, block=4194304, how=0) -> (needle_positions, haystack_positions) "
     "(int64 bytearrays) or None: every (i, j) with needles[i] in haystacks[j]; how 1: by automata over "
     "blocks of `block` needle bytes, 2: by hashed windows, 0: the cheaper."},
    {"snapshot_rows", om_snapshot_rows, METH_VARARGS,
     "snapshot_rows(rows, limit) -> (items, sizes, starts), False (over limit items) or None: the rows' items "
     "(exact str or float) in one tuple, a row given again right after itself once, each row's size and where its "
     "items start (int64 bytes)."},
    {"rows_unchanged", om_rows_unchanged, METH_VARARGS,
     "rows_unchanged(rows, kept, items, sizes) -> bool: whether rows are the row objects kept, holding the items "
     "snapshot_rows(kept) froze."},
    {"membership_hits", om_membership_hits, METH_VARARGS,
     "membership_hits(predictions, references, width, masks, labels) -> hits (int64 bytes, examples x (masks + 2)) "
     "or None: per example and mask, the predicted tuples equal (stripped) on the mask's columns to some gold tuple, "
     "then the numbers of predicted and gold tuples."},
    {"exact_tuple_counts", om_exact_tuple_counts, METH_VARARGS,
     "exact_tuple_counts(pred_offsets, pred_ids, gold_offsets, gold_ids, width, masks, limit) -> counts (int64 "
     "bytes, examples x masks x 3): kept predictions, kept gold tuples and matched ones per example and mask."},
    {"tuple_codes", om_tuple_codes, METH_VARARGS,
     "tuple_codes(rows, width, others=None) -> (sizes, codes, distinct) or None: each row's number of tuples (int64 "
     "bytes), each string's number among the distinct strings (uint32 bytes), the distinct strings; with others, "
     "(sizes, codes, other_sizes, other_codes, distinct), each example's other row coded first."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    om_str_hash = (hashfunc)PyType_GetSlot(&PyUnicode_Type, Py_tp_hash);
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddIntConstant(created, "VERSION", 7) < 0)
        Py_CLEAR(created);
    return created;
}
