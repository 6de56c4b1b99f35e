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

static PyMethodDef methods[] = {
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(keys, values, headers, stamps, first_timestamp): a v2 records section."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocol._encoder",
                                    "Kafka v2 records encoded at C speed (see the source).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__encoder(void) { return PyModule_Create(&module); }
