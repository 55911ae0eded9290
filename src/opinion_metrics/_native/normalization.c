/* A document's keywords for document_edges (documents.c), row by row (`om_keep_row`):
 * normalized, then empty and repeated forms dropped. A built-in normalization of ASCII text
 * is applied in C, by the tables opinion_metrics.core.documents reads from the library's
 * normalizations (`_ascii_tables`; eight bytes at a time where a keyword is letters and
 * spaces); the other keywords' forms are taken from what Python computed. The forms are
 * written to an arena of blocks that never move. (keep_row and normalize_into stay in one
 * file: the compiler inlines one into the other, per keyword.) */
#include "documents.h"

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

/* `size` bytes of the arena, kept until it is rewound; NULL with MemoryError. */
char *
om_arena_bytes(Arena *a, Py_ssize_t size)
{
    char *out = arena_room(a, size);
    if (out != NULL)
        arena_keep(a, size);
    return out;
}

void
om_arena_rewind(Arena *a)
{
    a->current = 0;
    a->used = 0;
}

void
om_arena_free(Arena *a)
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

/* Sets up `norm` from the tables document_edges is given (`table`: each ASCII byte's
 * replacement, DELETED for none; `spaces`: 1 for white space), or 0 with ValueError. */
int
om_normalization(Normalization *norm, const Py_buffer *table, const Py_buffer *spaces, int collapse)
{
    if (table->len != 128 || spaces->len != 128) {
        PyErr_SetString(PyExc_ValueError, "the tables have one byte per ASCII character");
        return 0;
    }
    *norm = (Normalization){table->buf, spaces->buf, collapse, {0}, {0}, {0}, 1, 1};
    for (int c = 0; c < 128; c++) {
        if (norm->map[c] >= 0x80 && norm->map[c] != DELETED) {
            PyErr_SetString(PyExc_ValueError, "a byte is replaced by a byte that is not ASCII");
            return 0;
        }
        norm->gap[c] = norm->map[c] != DELETED && norm->space[norm->map[c]];
        norm->keep[c] = norm->map[c] != DELETED && !norm->gap[c];
        norm->same[c] = norm->map[c] != c ? 0 : !collapse || norm->keep[c] ? 1 : c == ' ' ? 2 : 0;
    }
    /* letters_and_spaces holds where letters are kept, lower-cased (or all as they are),
     * and a space is white space kept between words. */
    norm->lower = norm->map['A'] == 'a';
    for (int c = 'A'; c <= 'z'; c++)
        if ((c <= 'Z' || c >= 'a') && norm->map[c] != (c <= 'Z' && norm->lower ? c + 32 : c))
            norm->letters = 0;
    if (norm->map[' '] != ' ' || !norm->space[' '])
        norm->letters = 0;
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

/* Normalizes a row of keywords into `kept` (room for all), dropping empty and repeated forms;
 * returns how many are kept, -1 with an exception or not plain, -2 if some are missing. */
Py_ssize_t
om_keep_row(PyObject *row, Arena *a, const Normalization *norm, int match, PyObject *known, PyObject *missing,
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
