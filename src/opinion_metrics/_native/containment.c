/* contained_pairs: substring containment on the strings' UTF-8 bytes, for
 * opinion_metrics.core.containment (Aho-Corasick automata over blocks of needles, or hashed windows
 * of the haystacks).
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
 */
#include "common.h"

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

/* The pairs (i, j) with needle i (data[i], size[i], i < n) in haystack j (data[n + j], size[n + j],
 * j < m), added to `pairs` (width 2) in no set order, by automata over blocks of `block` needle
 * bytes or by windows (`how` 1, 2; 0 the cheaper). 0 with an exception, or without one
 * (*plain = 0) where automata are forced on a needle too long for one. */
int
om_contained(const char *const *data, const Py_ssize_t *size, Py_ssize_t n, Py_ssize_t m, Py_ssize_t block, int how,
             Rows *pairs, int *plain)
{
    int ok = 0;
    Py_ssize_t *next_same = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *last = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    uint8_t *pairs_in = PyMem_Calloc(65536 / 8, 1);
    Py_ssize_t *candidates = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    uint8_t *is_width = NULL;
    if (next_same == NULL || last == NULL || pairs_in == NULL || candidates == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        last[i] = -1;
    /* Candidates: the needles whose every byte pair (or byte) is one of the haystacks'. */
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
    /* Comparable costs (about ns): a window per (start, width) of the haystacks (its hash, a
     * probe in a table often out of cache); an automaton node per needle byte (a row of
     * moves), then a step per haystack byte per automaton. */
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
    if ((is_width = PyMem_Calloc((size_t)longest_needle + 1, 1)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < n_candidates; c++)
        is_width[size[candidates[c]]] = 1;
    for (Py_ssize_t j = 0; j < m; j++) {
        for (Py_ssize_t width = 1; width <= longest_needle && width <= size[n + j]; width++)
            if (is_width[width])
                windows += 10.0 * (double)(size[n + j] - width + 1);
    }
    ok = (how == 2 || (how == 0 && windows < automaton))
             ? pairs_by_windows(data, size, n, m, candidates, n_candidates, next_same, last, pairs)
             : pairs_by_automata(data, size, n, m, candidates, n_candidates, block, class_of, classes, next_same,
                                 last, pairs, plain);
done:
    PyMem_Free(is_width);
    PyMem_Free(pairs_in);
    PyMem_Free(candidates);
    PyMem_Free(next_same);
    PyMem_Free(last);
    return ok;
}

PyObject *
om_contained_pairs(PyObject *module, PyObject *args)
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
    Rows pairs = {{NULL, NULL, NULL}, 2, 0, 0};
    int plain = 1;
    if (data == NULL || size == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* No Python code runs below: the sequences do not change meanwhile. */
    if (!utf8_items(needle_list, n, data, size, &plain) || !utf8_items(haystack_list, m, data + n, size + n, &plain))
        goto done;
    if (om_contained(data, size, n, m, block, how, &pairs, &plain))
        result = om_rows_as_columns(&pairs);
done:
    PyMem_Free(data);
    PyMem_Free(size);
    om_free_rows(&pairs);
    if (result == NULL && !plain && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}
