/* protocol/_encoder.c: the records section of a Kafka RecordBatch v2, encoded at C speed from
 * the columns a producer keeps (protocol/batch.py's build_columns wraps it).
 *
 * encode_records(keys, values, headers, stamps, first_timestamp) -> bytes
 *   keys, values: lists of n bytes-like objects or None (null);
 *   headers: None (no record has any) or a list of n items, each None, or a list or tuple of
 *            (str key, bytes-like value or None) pairs;
 *   stamps: a list of n ints, each `stamp - first_timestamp` must fit an int64 (the caller
 *           checks the range: batch.py's _timestamps).
 *
 * Each record, as the decoder (protocol/_records.c) reads it back: varint length of the rest,
 * int8 attributes 0, varlong timestamp delta, varint offset delta (the record's index), varint
 * key length (-1: null) and key, varint value length and value, varint header count, and per
 * header varint key length, UTF-8 key, varint value length (-1: null), value. Varints are
 * zigzag LEB128.
 *
 * Two passes: the first checks every type and sizes the output (keeping each key's and value's
 * pointer and length), the second writes into one bytes object of exactly that size. No Python
 * code runs between them, and buffers taken through the buffer protocol stay exported until
 * the end, so no memory moves. TypeError for a wrong type, OverflowError for
 * a length or count past int32, ValueError for columns of different lengths.
 *
 * encode_arrow and murmur2_arrow (further down, where their layout is described): the same
 * records section from Arrow columns' buffers, and Kafka's partitioner hash of a key column,
 * for the Spark sink (spark_connector/arrow_sink.py), with no Python object per row.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_LEN 0x7fffffffLL

typedef struct {
    const char *ptr;
    Py_ssize_t len; /* -1: null */
} span;

static inline int varint_size(uint64_t zz) {
    int n = 1;
    while (zz >= 0x80) {
        zz >>= 7;
        n++;
    }
    return n;
}

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline char *put_varint(char *p, int64_t v) {
    uint64_t zz = zigzag(v);
    while (zz >= 0x80) {
        *p++ = (char)((zz & 0x7f) | 0x80);
        zz >>= 7;
    }
    *p++ = (char)zz;
    return p;
}

/* Buffers taken from objects other than bytes and bytearray, released when the call ends. */
typedef struct {
    Py_buffer *views;
    Py_ssize_t count, room;
} held;

static void release_all(held *h) {
    for (Py_ssize_t i = 0; i < h->count; i++) PyBuffer_Release(&h->views[i]);
    PyMem_Free(h->views);
}

/* A bytes-like object or None as a span; 0 on success. A buffer taken through the buffer
 * protocol stays exported (in `h`) until the call ends, so its memory cannot move. */
static int as_span(PyObject *o, span *out, const char *what, Py_ssize_t i, held *h) {
    if (o == Py_None) {
        out->ptr = NULL;
        out->len = -1;
        return 0;
    }
    if (PyBytes_Check(o)) {
        out->ptr = PyBytes_AS_STRING(o);
        out->len = PyBytes_GET_SIZE(o);
    } else if (PyByteArray_Check(o)) {
        out->ptr = PyByteArray_AS_STRING(o);
        out->len = PyByteArray_GET_SIZE(o);
    } else if (PyObject_CheckBuffer(o)) {
        if (h->count == h->room) {
            Py_ssize_t room = h->room ? 2 * h->room : 16;
            Py_buffer *views = PyMem_Realloc(h->views, sizeof(Py_buffer) * (size_t)room);
            if (!views) {
                PyErr_NoMemory();
                return -1;
            }
            h->views = views;
            h->room = room;
        }
        Py_buffer *view = &h->views[h->count];
        if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) < 0) return -1;
        h->count++;
        out->ptr = view->buf;
        out->len = view->len;
    } else {
        PyErr_Format(PyExc_TypeError, "record %zd: %s must be bytes or None, not %.80s", i, what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (out->len > MAX_LEN) {
        PyErr_Format(PyExc_OverflowError, "record %zd: %s of %zd bytes", i, what, out->len);
        return -1;
    }
    return 0;
}

static Py_ssize_t span_size(const span *s) {
    return varint_size(zigzag(s->len)) + (s->len > 0 ? s->len : 0);
}

static char *put_span(char *p, const span *s) {
    p = put_varint(p, s->len);
    if (s->len > 0) {
        memcpy(p, s->ptr, (size_t)s->len);
        p += s->len;
    }
    return p;
}

/* The headers of one record: their encoded size (count included), or -1 with an exception. */
static Py_ssize_t headers_size(PyObject *hs, Py_ssize_t i, Py_ssize_t *count, held *hd) {
    if (hs == Py_None) {
        *count = 0;
        return 1;
    }
    if (!PyList_Check(hs) && !PyTuple_Check(hs)) {
        PyErr_Format(PyExc_TypeError, "record %zd: headers must be a list of (str, bytes)", i);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(hs);
    if (n > MAX_LEN) {
        PyErr_Format(PyExc_OverflowError, "record %zd: %zd headers", i, n);
        return -1;
    }
    Py_ssize_t size = varint_size(zigzag(n));
    for (Py_ssize_t h = 0; h < n; h++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(hs, h);
        if (!(PyTuple_Check(pair) || PyList_Check(pair)) || PySequence_Fast_GET_SIZE(pair) != 2 ||
            !PyUnicode_Check(PySequence_Fast_GET_ITEM(pair, 0))) {
            PyErr_Format(PyExc_TypeError, "record %zd: header %zd is not a (str, bytes) pair", i,
                         h);
            return -1;
        }
        Py_ssize_t klen;
        if (!PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(pair, 0), &klen)) return -1;
        span v;
        if (as_span(PySequence_Fast_GET_ITEM(pair, 1), &v, "a header value", i, hd) < 0)
            return -1;
        if (klen > MAX_LEN) {
            PyErr_Format(PyExc_OverflowError, "record %zd: a header key of %zd bytes", i, klen);
            return -1;
        }
        size += varint_size(zigzag(klen)) + klen + span_size(&v);
    }
    *count = n;
    return size;
}

static char *put_headers(char *p, PyObject *hs, Py_ssize_t count, held *hd) {
    p = put_varint(p, count);
    for (Py_ssize_t h = 0; h < count; h++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(hs, h);
        Py_ssize_t klen;
        const char *key = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(pair, 0), &klen);
        p = put_varint(p, klen); /* (the UTF-8 is cached in the str since pass 1) */
        memcpy(p, key, (size_t)klen);
        p += klen;
        span v; /* checked in pass 1; a buffer is exported again, at the same address */
        if (as_span(PySequence_Fast_GET_ITEM(pair, 1), &v, "a header value", h, hd) < 0)
            return NULL;
        p = put_span(p, &v);
    }
    return p;
}

static PyObject *encode_records(PyObject *self, PyObject *args) {
    PyObject *keys, *values, *headers, *stamps;
    long long first;
    if (!PyArg_ParseTuple(args, "O!O!OO!L", &PyList_Type, &keys, &PyList_Type, &values, &headers,
                          &PyList_Type, &stamps, &first))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (PyList_GET_SIZE(keys) != n || PyList_GET_SIZE(stamps) != n ||
        (headers != Py_None && (!PyList_Check(headers) || PyList_GET_SIZE(headers) != n))) {
        PyErr_SetString(PyExc_ValueError, "keys, values, headers and stamps: one per record");
        return NULL;
    }
    if (n > MAX_LEN) {
        PyErr_Format(PyExc_OverflowError, "%zd records in one batch", n);
        return NULL;
    }
    /* per record: key, value, body size, header count, timestamp delta */
    span *kv = PyMem_Malloc(sizeof(span) * 2 * (size_t)(n ? n : 1));
    Py_ssize_t *body = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(n ? n : 1));
    int64_t *deltas = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    PyObject *out = NULL;
    held hd = {NULL, 0, 0};
    if (!kv || !body || !deltas) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int overflow = 0;
        long long ts = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(stamps, i), &overflow);
        if (ts == -1 && PyErr_Occurred()) goto done;
        if (overflow) {
            PyErr_Format(PyExc_OverflowError, "record %zd: timestamp out of range", i);
            goto done;
        }
        deltas[i] = (int64_t)((uint64_t)ts - (uint64_t)first);
        if (as_span(PyList_GET_ITEM(keys, i), &kv[2 * i], "the key", i, &hd) < 0) goto done;
        if (as_span(PyList_GET_ITEM(values, i), &kv[2 * i + 1], "the value", i, &hd) < 0)
            goto done;
        Py_ssize_t hsize = 1, hcount = 0;
        if (headers != Py_None) {
            hsize = headers_size(PyList_GET_ITEM(headers, i), i, &hcount, &hd);
            if (hsize < 0) goto done;
        }
        Py_ssize_t size = 1 + varint_size(zigzag(deltas[i])) + varint_size(zigzag(i)) +
                          span_size(&kv[2 * i]) + span_size(&kv[2 * i + 1]) + hsize;
        if (size > MAX_LEN || total > PY_SSIZE_T_MAX / 2) {
            PyErr_Format(PyExc_OverflowError, "record %zd: %zd bytes", i, size);
            goto done;
        }
        body[2 * i] = size;
        body[2 * i + 1] = hcount;
        total += varint_size(zigzag(size)) + size;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (!out) goto done;
    char *p = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        p = put_varint(p, body[2 * i]);
        *p++ = 0; /* attributes */
        p = put_varint(p, deltas[i]);
        p = put_varint(p, i);
        p = put_span(p, &kv[2 * i]);
        p = put_span(p, &kv[2 * i + 1]);
        if (headers == Py_None) {
            *p++ = 0;
        } else {
            p = put_headers(p, PyList_GET_ITEM(headers, i), body[2 * i + 1], &hd);
            if (!p) {
                Py_CLEAR(out);
                goto done;
            }
        }
    }
    if (p != PyBytes_AS_STRING(out) + total) { /* a sizing bug: never hand out a bad batch */
        Py_CLEAR(out);
        PyErr_SetString(PyExc_SystemError, "encode_records: sizes disagree");
    }
done:
    release_all(&hd);
    PyMem_Free(kv);
    PyMem_Free(body);
    PyMem_Free(deltas);
    return out;
}

/* ----- from Arrow columns ----------------------------------------------------------------
 *
 * encode_arrow(key, value, headers, indices, start, max_bytes) -> (bytes, stop)
 *   key, value: None (every record's is null) or an Arrow binary/string column as the tuple
 *     (length, validity buffer or None, offsets buffer, data buffer, array offset, large),
 *     `large` 1 for int64 offsets (large_binary/large_string), 0 for int32;
 *   headers: None or a list<struct<key string, value binary>> column as (length, validity or
 *     None, int32 offsets buffer, array offset, key column, value column), the struct's
 *     fields already flattened (pyarrow's StructArray.flatten: its offset and nulls applied);
 *   indices: an int64 buffer of row numbers: the records are rows indices[start], ...
 *     encoded in that order, as many as fit in max_bytes (at least one), all with timestamp
 *     delta 0; `stop` is where the next call starts.
 * The records section is the same bytes encode_records makes from the same rows as Python
 * objects (tests/unit/protocol/test_arrow_encoder.py). Every offset is checked against its
 * buffers before anything is read: ValueError for a column that does not hold up.
 *
 * murmur2_arrow(key) -> bytes: Kafka's toPositive(murmur2(key)) for every row of a key
 *   column, as native int32s (-1 for a null key): the default partitioner's hash.
 */

typedef struct {
    Py_ssize_t length, offset;
    const uint8_t *valid; /* NULL: no nulls */
    const char *offsets;
    const char *data;
    Py_ssize_t data_len;
    int large, absent;
} column;

static int take_buffer(PyObject *o, const char **ptr, Py_ssize_t *len, held *h) {
    span s;
    if (as_span(o, &s, "an Arrow buffer", 0, h) < 0) return -1;
    *ptr = s.ptr;
    *len = s.len;
    return 0;
}

static int get_column(PyObject *spec, column *c, held *h, const char *what) {
    memset(c, 0, sizeof(*c));
    if (spec == Py_None) {
        c->absent = 1;
        return 0;
    }
    PyObject *valid, *offsets, *data;
    if (!PyArg_ParseTuple(spec, "nOOOni", &c->length, &valid, &offsets, &data, &c->offset,
                          &c->large)) {
        PyErr_Format(PyExc_TypeError, "%s: not an Arrow binary column spec", what);
        return -1;
    }
    Py_ssize_t vlen = 0, olen = 0;
    const char *v = NULL;
    if (valid != Py_None && take_buffer(valid, &v, &vlen, h) < 0) return -1;
    if (take_buffer(offsets, &c->offsets, &olen, h) < 0) return -1;
    if (take_buffer(data, &c->data, &c->data_len, h) < 0) return -1;
    if (c->data_len < 0) c->data_len = 0; /* None: an all-empty column */
    Py_ssize_t width = c->large ? 8 : 4, end = c->offset + c->length;
    if (c->length < 0 || c->offset < 0 || c->offsets == NULL || olen / width < end + 1 ||
        (v != NULL && vlen * 8 < end)) {
        PyErr_Format(PyExc_ValueError, "%s: the Arrow buffers are shorter than the column", what);
        return -1;
    }
    c->valid = (const uint8_t *)v;
    return 0;
}

/* Row r of c as [*a, *b) of its data: 1 for a null, 0 for a value, -2 with ValueError when
 * its offsets are bad. */
static int column_range(const column *c, Py_ssize_t r, int64_t *a, int64_t *b,
                        const char *what) {
    if (r < 0 || r >= c->length) {
        PyErr_Format(PyExc_ValueError, "%s: row %zd outside a column of %zd", what, r, c->length);
        return -2;
    }
    Py_ssize_t i = c->offset + r;
    if (c->valid && !((c->valid[i >> 3] >> (i & 7)) & 1)) return 1;
    if (c->large) {
        memcpy(a, c->offsets + 8 * i, 8);
        memcpy(b, c->offsets + 8 * (i + 1), 8);
    } else {
        int32_t a32, b32;
        memcpy(&a32, c->offsets + 4 * i, 4);
        memcpy(&b32, c->offsets + 4 * (i + 1), 4);
        *a = a32;
        *b = b32;
    }
    if (*a < 0 || *b < *a || *b > c->data_len || *b - *a > MAX_LEN) {
        PyErr_Format(PyExc_ValueError, "%s: row %zd has offsets %lld..%lld in %zd", what, r,
                     (long long)*a, (long long)*b, c->data_len);
        return -2;
    }
    return 0;
}

/* Row r of c as a span (len -1: null, or an absent column); -2 with ValueError. */
static int column_span(const column *c, Py_ssize_t r, span *out, const char *what) {
    int64_t a = 0, b = 0;
    int rc = c->absent ? 1 : column_range(c, r, &a, &b, what);
    if (rc < 0) return rc;
    out->ptr = rc ? NULL : c->data + a;
    out->len = rc ? -1 : (Py_ssize_t)(b - a);
    return 0;
}

typedef struct {
    column list, keys, values;
    int absent;
} header_column;

static int get_headers(PyObject *spec, header_column *hc, held *h) {
    memset(hc, 0, sizeof(*hc));
    if (spec == Py_None) {
        hc->absent = 1;
        return 0;
    }
    PyObject *valid, *offsets, *keys, *values;
    column *l = &hc->list;
    if (!PyArg_ParseTuple(spec, "nOOnOO", &l->length, &valid, &offsets, &l->offset, &keys,
                          &values)) {
        PyErr_SetString(PyExc_TypeError, "headers: not an Arrow list column spec");
        return -1;
    }
    /* the list's offsets index rows of the flattened key and value columns */
    PyObject *list_spec = Py_BuildValue("(nOOOni)", l->length, valid, offsets, Py_None,
                                        l->offset, 0);
    if (!list_spec) return -1;
    int rc = get_column(list_spec, l, h, "headers");
    Py_DECREF(list_spec);
    if (rc < 0) return -1;
    if (get_column(keys, &hc->keys, h, "header keys") < 0) return -1;
    if (get_column(values, &hc->values, h, "header values") < 0) return -1;
    if (hc->keys.absent || hc->values.absent) {
        PyErr_SetString(PyExc_TypeError, "headers: the key and value columns are needed");
        return -1;
    }
    hc->list.data_len = hc->keys.length; /* list offsets must stay within the children */
    return 0;
}

/* Row r's headers: their encoded size (count included) and [first, first + count) child rows;
 * -1 with an exception. */
static Py_ssize_t arrow_headers_size(const header_column *hc, Py_ssize_t r, Py_ssize_t *first,
                                     Py_ssize_t *count) {
    *first = 0;
    *count = 0;
    if (hc->absent) return 1;
    int64_t a = 0, b = 0;
    int rc = column_range(&hc->list, r, &a, &b, "headers");
    if (rc < 0) return -1;
    if (rc == 1 || a == b) return 1; /* null or empty: no header */
    *first = (Py_ssize_t)a;
    *count = (Py_ssize_t)(b - a);
    if (*first + *count > hc->values.length) {
        PyErr_Format(PyExc_ValueError, "headers: row %zd past the header values", r);
        return -1;
    }
    Py_ssize_t size = varint_size(zigzag(*count));
    for (Py_ssize_t j = *first; j < *first + *count; j++) {
        span k, v;
        if (column_span(&hc->keys, j, &k, "header keys") < 0) return -1;
        if (k.len < 0) {
            PyErr_Format(PyExc_ValueError, "record %zd: a header key is null", r);
            return -1;
        }
        if (column_span(&hc->values, j, &v, "header values") < 0) return -1;
        size += span_size(&k) + span_size(&v);
    }
    return size;
}

static char *put_arrow_headers(char *p, const header_column *hc, Py_ssize_t first,
                               Py_ssize_t count) {
    p = put_varint(p, count);
    for (Py_ssize_t j = first; j < first + count; j++) {
        span k, v; /* checked in pass 1 */
        column_span(&hc->keys, j, &k, "header keys");
        column_span(&hc->values, j, &v, "header values");
        p = put_span(p, &k);
        p = put_span(p, &v);
    }
    return p;
}

static PyObject *encode_arrow(PyObject *self, PyObject *args) {
    PyObject *kspec, *vspec, *hspec, *ispec;
    Py_ssize_t start, max_bytes;
    if (!PyArg_ParseTuple(args, "OOOOnn", &kspec, &vspec, &hspec, &ispec, &start, &max_bytes))
        return NULL;
    held hd = {NULL, 0, 0};
    column key, value;
    header_column headers;
    const char *idx = NULL;
    Py_ssize_t idx_len = 0;
    PyObject *out = NULL, *result = NULL;
    Py_ssize_t *body = NULL;
    if (get_column(kspec, &key, &hd, "key") < 0 || get_column(vspec, &value, &hd, "value") < 0 ||
        get_headers(hspec, &headers, &hd) < 0 || take_buffer(ispec, &idx, &idx_len, &hd) < 0)
        goto done;
    Py_ssize_t n = idx_len / 8;
    if (start < 0 || start >= n || max_bytes <= 0) {
        PyErr_Format(PyExc_ValueError, "encode_arrow: start %zd of %zd rows", start, n);
        goto done;
    }
    /* per record: body size, first header row, header count */
    body = PyMem_Malloc(sizeof(Py_ssize_t) * 3 * (size_t)(n - start));
    if (!body) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t total = 0, stop = start;
    for (Py_ssize_t j = start; j < n && j - start < MAX_LEN; j++) {
        int64_t r;
        memcpy(&r, idx + 8 * j, 8);
        span k, v;
        if (column_span(&key, (Py_ssize_t)r, &k, "key") < 0) goto done;
        if (column_span(&value, (Py_ssize_t)r, &v, "value") < 0) goto done;
        Py_ssize_t *b = &body[3 * (j - start)];
        Py_ssize_t hsize = arrow_headers_size(&headers, (Py_ssize_t)r, &b[1], &b[2]);
        if (hsize < 0) goto done;
        Py_ssize_t size = 1 + 1 + varint_size(zigzag(j - start)) + span_size(&k) +
                          span_size(&v) + hsize;
        if (size > MAX_LEN) {
            PyErr_Format(PyExc_OverflowError, "record %zd: %zd bytes", (Py_ssize_t)r, size);
            goto done;
        }
        Py_ssize_t grown = total + varint_size(zigzag(size)) + size;
        if (j > start && grown > max_bytes) break;
        b[0] = size;
        total = grown;
        stop = j + 1;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (!out) goto done;
    char *p = PyBytes_AS_STRING(out);
    for (Py_ssize_t j = start; j < stop; j++) {
        int64_t r;
        memcpy(&r, idx + 8 * j, 8);
        span k, v;
        column_span(&key, (Py_ssize_t)r, &k, "key");
        column_span(&value, (Py_ssize_t)r, &v, "value");
        Py_ssize_t *b = &body[3 * (j - start)];
        p = put_varint(p, b[0]);
        *p++ = 0; /* attributes */
        *p++ = 0; /* timestamp delta: every record has the batch's timestamp */
        p = put_varint(p, j - start);
        p = put_span(p, &k);
        p = put_span(p, &v);
        p = headers.absent ? (*p++ = 0, p) : put_arrow_headers(p, &headers, b[1], b[2]);
    }
    if (p != PyBytes_AS_STRING(out) + total) {
        PyErr_SetString(PyExc_SystemError, "encode_arrow: sizes disagree");
        goto done;
    }
    result = Py_BuildValue("(On)", out, stop);
done:
    Py_XDECREF(out);
    release_all(&hd);
    PyMem_Free(body);
    return result;
}

static uint32_t murmur2(const uint8_t *data, Py_ssize_t length) {
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t quads = length / 4;
    for (Py_ssize_t i = 0; i < quads; i++) {
        const uint8_t *q = data + 4 * i;
        uint32_t k = (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) |
                     ((uint32_t)q[3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = data + 4 * quads;
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8; /* fall through */
    case 1:
        h ^= tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

static PyObject *murmur2_arrow(PyObject *self, PyObject *args) {
    PyObject *kspec;
    if (!PyArg_ParseTuple(args, "O", &kspec)) return NULL;
    held hd = {NULL, 0, 0};
    column key;
    PyObject *out = NULL;
    if (get_column(kspec, &key, &hd, "key") < 0) goto done;
    if (key.absent) {
        PyErr_SetString(PyExc_TypeError, "murmur2_arrow needs a key column");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, 4 * key.length);
    if (!out) goto done;
    int32_t *hashes = (int32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t r = 0; r < key.length; r++) {
        span k;
        if (column_span(&key, r, &k, "key") < 0) {
            Py_CLEAR(out);
            goto done;
        }
        hashes[r] = k.len < 0 ? -1 : (int32_t)(murmur2((const uint8_t *)k.ptr, k.len) & 0x7fffffffu);
    }
done:
    release_all(&hd);
    return out;
}

static PyMethodDef methods[] = {
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(keys, values, headers, stamps, first_timestamp): a v2 records section."},
    {"encode_arrow", encode_arrow, METH_VARARGS,
     "encode_arrow(key, value, headers, indices, start, max_bytes): (records section, stop)."},
    {"murmur2_arrow", murmur2_arrow, METH_VARARGS,
     "murmur2_arrow(key): Kafka's positive murmur2 of every key, int32s (-1: null key)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocol._encoder",
                                    "Kafka v2 records encoded at C speed (see the source).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__encoder(void) { return PyModule_Create(&module); }
