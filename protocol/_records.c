/* protocol/_records.c: the records of uncompressed Kafka RecordBatch v2 payloads, walked at C
 * speed into Arrow column buffers (Spark) or into record tuples (the consumer).
 *
 * Input: "segments", one per batch: (buffer, start, end, base_offset, last_offset_delta,
 * first_timestamp, max_timestamp, record_count, lo, hi, log_append). buffer[start:end) is the
 * batch's records section (after its 61-byte header, already decompressed: protocol/columns.py
 * does that). The records whose offset delta is in [lo, hi) are produced, each at offset
 * base_offset + its offset delta; every record is walked and checked.
 *
 * Compacted batches (Kafka's log cleaner) are read as Kafka's consumer reads them: a batch keeps
 * its base offset and last_offset_delta but may hold fewer records than last_offset_delta + 1
 * (none at all: an empty batch kept for its producer's state), each with its ORIGINAL offset
 * delta; so deltas strictly increase and stay <= last_offset_delta, but may skip. The
 * delete-horizon attribute (KIP-534) only means first_timestamp holds the horizon; record
 * timestamps are still first_timestamp + timestamp_delta, so nothing here changes for it.
 *
 * One record (varint: zigzag LEB128 of an int32, at most 5 bytes; varlong: of an int64, at
 * most 10 bytes; a length of -1 is null):
 *
 *     varint   length           bytes of the record after this field (>= 0, within the section)
 *     int8     attributes       unused
 *     varlong  timestamp_delta  from first_timestamp (LogAppendTime batches: max_timestamp)
 *     varint   offset_delta     above the previous record's (0, 1, 2... unless compacted),
 *                               at most last_offset_delta
 *     varint   key_length       -1: null; then the key bytes
 *     varint   value_length     -1: null; then the value bytes
 *     varint   header_count     >= 0; per header: varint key length (>= 0), UTF-8 key,
 *                               varint value length (-1: null), value bytes
 *
 * The record's fields must end exactly at its length, and the section exactly after
 * record_count records. Anything else raises _records.DecodeError (a ValueError) naming the
 * record; no read ever leaves [start, end).
 *
 * arrow_columns(segments, want_headers, timestamp_scale) -> (n, offsets int64[n],
 *     timestamps int64[n] (ms * scale), timestamp_types int32[n], key, value, headers)
 *   key/value: (validity bitmap or None, null_count, int32 offsets[n+1], data)
 *   headers (None unless want_headers): (list validity or None, list null_count, int32
 *     offsets[n+1], header total H, key offsets[H+1], key data, value validity or None,
 *     value null_count, value offsets[H+1], value data). A record without headers is a null.
 *   Two passes: the first checks everything, sizes the buffers and keeps each wanted record's
 *   parsed fields (up to KEPT_RECORDS_MAX records, 64 B each), the second fills the buffers from
 *   those without parsing again (past the bound it walks the records again): one parse per
 *   record cut the fill's CPU by 10-13% at 100 B (docs/benchmarks.md).
 * records(cls, topic, partition, segments) -> [cls(topic, partition, offset, timestamp, key,
 *     value, headers)] made as tuples of the tuple subclass `cls` (a NamedTuple), headers a
 *     list of (str, bytes | None) or None.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static PyObject *DecodeError;

/* The smallest record: length, attributes, timestamp delta, offset delta, key length, value
 * length and header count, one byte each. */
#define MIN_RECORD_BYTES 7

typedef struct {
    Py_buffer view;
    Py_ssize_t start, end;
    long long base_offset, first_ts, max_ts;
    long long lo, hi; /* offset deltas wanted: [lo, hi) */
    int last_delta, count, log_append;
} segment;

typedef struct {
    int64_t ts_delta;
    int32_t offset_delta;
    const uint8_t *key, *value, *headers; /* headers: where the first header starts */
    int32_t key_len, value_len, header_count;
} record;

/* ----- varints ----------------------------------------------------------------------------- */

static inline int read_varint(const uint8_t **pp, const uint8_t *end, int32_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (v > 0xffffffffULL) return -1;
            uint32_t u = (uint32_t)v;
            *out = (int32_t)((u >> 1) ^ (0u - (u & 1u)));
            *pp = p;
            return 0;
        }
    }
    return -1;
}

static inline int read_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        if (i == 9 && b > 1) return -1;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)((v >> 1) ^ (0ULL - (v & 1ULL)));
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* ----- one record -------------------------------------------------------------------------- */

/* A length-prefixed field: -1 null (if nullable), else that many bytes within end. */
static inline const char *read_bytes(const uint8_t **pp, const uint8_t *end, int nullable,
                                     const uint8_t **data, int32_t *len) {
    if (read_varint(pp, end, len) < 0) return "a length varint is malformed";
    if (*len == -1 && nullable) {
        *data = NULL;
        return NULL;
    }
    if (*len < 0) return "a length is negative";
    if (*len > end - *pp) return "a field runs past the end of its record";
    *data = *pp;
    *pp += *len;
    return NULL;
}

static inline const char *read_header(const uint8_t **pp, const uint8_t *end, const uint8_t **k,
                                      int32_t *klen, const uint8_t **v, int32_t *vlen) {
    const char *err = read_bytes(pp, end, 0, k, klen);
    if (err) return err;
    return read_bytes(pp, end, 1, v, vlen);
}

/* Parse the record at *pp (within end); on success *pp is after it. */
static const char *read_record(const uint8_t **pp, const uint8_t *end, record *r) {
    int32_t length;
    const char *err;
    if (read_varint(pp, end, &length) < 0) return "the record length varint is malformed";
    if (length < 1 || length > end - *pp) return "the record length runs past the section";
    const uint8_t *p = *pp + 1; /* attributes: unused */
    const uint8_t *rend = *pp + length;
    if (read_varlong(&p, rend, &r->ts_delta) < 0) return "the timestamp delta is malformed";
    if (read_varint(&p, rend, &r->offset_delta) < 0) return "the offset delta is malformed";
    if ((err = read_bytes(&p, rend, 1, &r->key, &r->key_len))) return err;
    if ((err = read_bytes(&p, rend, 1, &r->value, &r->value_len))) return err;
    if (read_varint(&p, rend, &r->header_count) < 0) return "the header count is malformed";
    if (r->header_count < 0 || r->header_count > (rend - p) / 2)
        return "the header count does not fit the record";
    r->headers = p;
    for (int32_t h = 0; h < r->header_count; h++) {
        const uint8_t *k, *v;
        int32_t kl = 0, vl = 0;
        if ((err = read_header(&p, rend, &k, &kl, &v, &vl))) return err;
    }
    if (p != rend) return "the record has bytes after its last field";
    *pp = rend;
    return NULL;
}

/* The next record of a batch: read_record, and its offset delta must be above the previous
 * record's (`*prev`, -1 before the first) and at most the batch's last offset delta. */
static inline const char *read_next(const uint8_t **pp, const uint8_t *end, int32_t *prev,
                                    int32_t last_delta, record *r) {
    const char *err = read_record(pp, end, r);
    if (err) return err;
    if (r->offset_delta <= *prev) return "its offset delta is not above the previous record's";
    if (r->offset_delta > last_delta) return "its offset delta is past the batch's last one";
    *prev = r->offset_delta;
    return NULL;
}

/* ----- segments ---------------------------------------------------------------------------- */

static void release_segments(segment *segs, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) PyBuffer_Release(&segs[i].view);
    PyMem_Free(segs);
}

/* Parse the Python list of segment tuples; NULL (an exception set) on a bad argument. */
static segment *parse_segments(PyObject *list, Py_ssize_t *count) {
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "segments must be a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    segment *segs = PyMem_Calloc(n ? n : 1, sizeof(segment));
    if (!segs) return (segment *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        segment *s = &segs[i];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(list, i), "y*nnLiLLiLLp;a segment is (buffer, "
                              "start, end, base, last_delta, first_ts, max_ts, count, lo, hi, "
                              "log_append)",
                              &s->view, &s->start, &s->end, &s->base_offset, &s->last_delta,
                              &s->first_ts, &s->max_ts, &s->count, &s->lo, &s->hi,
                              &s->log_append)) {
            release_segments(segs, i);
            return NULL;
        }
        /* count <= last_delta + 1: deltas strictly increase from 0 up to last_delta */
        if (s->start < 0 || s->start > s->end || s->end > s->view.len || s->last_delta < 0 ||
            s->count < 0 || s->count > (long long)s->last_delta + 1 || s->lo < 0 ||
            s->lo > s->hi || s->hi > (long long)s->last_delta + 1) {
            PyErr_Format(PyExc_ValueError, "segment %zd is out of its buffer's bounds", i);
            release_segments(segs, i + 1);
            return NULL;
        }
        if (s->count > (s->end - s->start) / MIN_RECORD_BYTES) { /* before anything is sized */
            PyErr_Format(DecodeError, "the batch at offset %lld: %d records cannot fit in %zd "
                         "bytes", s->base_offset, s->count, s->end - s->start);
            release_segments(segs, i + 1);
            return NULL;
        }
    }
    *count = n;
    return segs;
}

static void *fail(const segment *s, int index, const char *what) {
    PyErr_Format(DecodeError, "record %d of the batch at offset %lld: %s", index, s->base_offset,
                 what);
    return NULL;
}

static inline int64_t stamp_of(const segment *s, const record *r) {
    if (s->log_append) return s->max_ts;
    return (int64_t)((uint64_t)s->first_ts + (uint64_t)r->ts_delta);
}

/* ----- UTF-8 (header keys become Arrow strings) ------------------------------------------- */

static int utf8_valid(const uint8_t *s, int32_t n) {
    int32_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        int len;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
        else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
        else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (n - i < len) return 0;
        for (int j = 1; j < len; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += len;
    }
    return 1;
}

/* ----- arrow_columns ----------------------------------------------------------------------- */

typedef struct {
    Py_ssize_t n, key_nulls, value_nulls, headers, header_nulls, hvalue_nulls;
    int64_t key_bytes, value_bytes, hkey_bytes, hvalue_bytes;
} sizes;

typedef struct { /* one binary column being filled */
    uint8_t *valid;
    int32_t *offsets;
    uint8_t *data;
    int64_t pos;
} binary_out;

static inline void put_binary(binary_out *b, Py_ssize_t i, const uint8_t *src, int32_t len) {
    if (src) {
        if (b->valid) b->valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        memcpy(b->data + b->pos, src, (size_t)len);
        b->pos += len;
    }
    b->offsets[i + 1] = (int32_t)b->pos;
}

/* A wanted record as pass 1 found it, kept for pass 2 (which then parses nothing again). */
typedef struct {
    record r;
    const segment *s;
} wanted;

/* Records kept at most: beyond, pass 2 parses the records again (64 B each: 64 MiB). */
#define KEPT_RECORDS_MAX (1 << 20)

typedef struct { /* the columns pass 2 fills */
    int64_t *offsets, *stamps;
    int32_t *types;
    binary_out *key, *value, *hlist, *hkey, *hvalue;
    Py_ssize_t out, hout;
} columns_out;

static inline void fill_one(columns_out *c, const segment *s, const record *r, int want_headers,
                            int64_t scale) {
    Py_ssize_t out = c->out;
    c->offsets[out] = s->base_offset + r->offset_delta;
    c->stamps[out] = (int64_t)((uint64_t)stamp_of(s, r) * (uint64_t)scale);
    c->types[out] = s->log_append;
    put_binary(c->key, out, r->key, r->key_len);
    put_binary(c->value, out, r->value, r->value_len);
    if (want_headers) {
        /* pass 1 checked the headers: within the record, which is within the section */
        const uint8_t *h = r->headers, *k = NULL, *v = NULL;
        const uint8_t *end = (const uint8_t *)s->view.buf + s->end;
        int32_t kl = 0, vl = 0;
        for (int32_t j = 0; j < r->header_count; j++, c->hout++) {
            read_header(&h, end, &k, &kl, &v, &vl);
            put_binary(c->hkey, c->hout, k, kl);
            put_binary(c->hvalue, c->hout, v, vl);
        }
        if (r->header_count && c->hlist->valid)
            c->hlist->valid[out >> 3] |= (uint8_t)(1u << (out & 7));
        c->hlist->offsets[out + 1] = (int32_t)c->hout;
    }
    c->out++;
}

/* Pass 1 (c NULL): check every record and count, keeping the wanted ones in `keep` (when not
 * NULL: room for every record of the segments); pass 2: fill the columns, from `keep` when
 * pass 1 kept them, else by walking the records again. */
static int walk_arrow(segment *segs, Py_ssize_t nsegs, int want_headers, int64_t scale,
                      sizes *sz, wanted *keep, columns_out *c) {
    if (c && keep) {
        for (Py_ssize_t i = 0; i < sz->n; i++) fill_one(c, keep[i].s, &keep[i].r, want_headers,
                                                        scale);
        return 0;
    }
    for (Py_ssize_t si = 0; si < nsegs; si++) {
        segment *s = &segs[si];
        const uint8_t *p = (const uint8_t *)s->view.buf + s->start;
        const uint8_t *end = (const uint8_t *)s->view.buf + s->end;
        int32_t prev = -1;
        for (int i = 0; i < s->count; i++) {
            record r;
            const char *err = read_next(&p, end, &prev, s->last_delta, &r);
            if (err) return fail(s, i, err), -1;
            if (r.offset_delta < s->lo || r.offset_delta >= s->hi) continue;
            if (c) {
                fill_one(c, s, &r, want_headers, scale);
                continue;
            }
            if (keep) keep[sz->n] = (wanted){r, s};
            sz->n++;
            if (r.key) sz->key_bytes += r.key_len; else sz->key_nulls++;
            if (r.value) sz->value_bytes += r.value_len; else sz->value_nulls++;
            if (!want_headers) continue;
            if (r.header_count == 0) sz->header_nulls++;
            sz->headers += r.header_count;
            const uint8_t *h = r.headers, *k = NULL, *v = NULL;
            int32_t kl = 0, vl = 0;
            for (int32_t j = 0; j < r.header_count; j++) {
                read_header(&h, end, &k, &kl, &v, &vl);
                if (!utf8_valid(k, kl)) return fail(s, i, "a header key is not UTF-8"), -1;
                sz->hkey_bytes += kl;
                if (v) sz->hvalue_bytes += vl; else sz->hvalue_nulls++;
            }
        }
        if (p != end) return fail(s, s->count, "bytes follow the last record"), -1;
    }
    return 0;
}

/* A bytes object of `size` bytes, zeroed; NULL on failure. */
static PyObject *zeroed(Py_ssize_t size) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, size);
    if (b) memset(PyBytes_AS_STRING(b), 0, (size_t)size);
    return b;
}

/* Allocate one binary column's buffers into `t` at `at` (validity, nulls, offsets, data). */
static int alloc_binary(binary_out *b, Py_ssize_t n, Py_ssize_t nulls, int64_t bytes,
                        PyObject **objs) {
    objs[0] = nulls ? zeroed((n + 7) / 8) : Py_NewRef(Py_None);
    objs[1] = zeroed((n + 1) * 4);
    objs[2] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bytes);
    if (!objs[0] || !objs[1] || !objs[2]) return -1;
    b->valid = nulls ? (uint8_t *)PyBytes_AS_STRING(objs[0]) : NULL;
    b->offsets = (int32_t *)PyBytes_AS_STRING(objs[1]);
    b->data = (uint8_t *)PyBytes_AS_STRING(objs[2]);
    b->pos = 0;
    return 0;
}

static PyObject *arrow_columns(PyObject *self, PyObject *args) {
    PyObject *list;
    int want_headers;
    long long scale;
    if (!PyArg_ParseTuple(args, "O!pL", &PyList_Type, &list, &want_headers, &scale)) return NULL;
    Py_ssize_t nsegs;
    segment *segs = parse_segments(list, &nsegs);
    if (!segs) return NULL;
    sizes sz = {0};
    PyObject *o[17] = {NULL}; /* offsets, stamps, types, key x3, value x3, hlist x2, hkey x3,
                                 hvalue x3 (hkey's validity slot unused) */
    PyObject *result = NULL;
    binary_out key, value, hlist = {0}, hkey = {0}, hvalue = {0};
    Py_ssize_t records = 0;
    for (Py_ssize_t i = 0; i < nsegs; i++) records += segs[i].count;
    wanted *keep = records <= KEPT_RECORDS_MAX /* else (or without memory) pass 2 walks again */
                       ? PyMem_Malloc((records ? records : 1) * sizeof(wanted))
                       : NULL;
    if (walk_arrow(segs, nsegs, want_headers, scale, &sz, keep, NULL) < 0) goto done;
    if (sz.key_bytes > INT32_MAX || sz.value_bytes > INT32_MAX || sz.hkey_bytes > INT32_MAX ||
        sz.hvalue_bytes > INT32_MAX || sz.headers > INT32_MAX) {
        PyErr_SetString(DecodeError, "the records hold more than 2 GiB for one Arrow column");
        goto done;
    }
    o[0] = PyBytes_FromStringAndSize(NULL, sz.n * 8);
    o[1] = PyBytes_FromStringAndSize(NULL, sz.n * 8);
    o[2] = PyBytes_FromStringAndSize(NULL, sz.n * 4);
    if (!o[0] || !o[1] || !o[2]) goto done;
    if (alloc_binary(&key, sz.n, sz.key_nulls, sz.key_bytes, o + 3) < 0) goto done;
    if (alloc_binary(&value, sz.n, sz.value_nulls, sz.value_bytes, o + 6) < 0) goto done;
    if (want_headers) {
        PyObject *list_bufs[3];
        int failed = alloc_binary(&hlist, sz.n, sz.header_nulls, 0, list_bufs);
        o[9] = list_bufs[0], o[10] = list_bufs[1];
        Py_XDECREF(list_bufs[2]); /* a list has no data buffer */
        if (failed < 0) goto done;
        if (alloc_binary(&hkey, sz.headers, 0, sz.hkey_bytes, o + 11) < 0) goto done;
        if (alloc_binary(&hvalue, sz.headers, sz.hvalue_nulls, sz.hvalue_bytes, o + 14) < 0)
            goto done;
    }
    columns_out cols = {(int64_t *)PyBytes_AS_STRING(o[0]), (int64_t *)PyBytes_AS_STRING(o[1]),
                        (int32_t *)PyBytes_AS_STRING(o[2]), &key, &value, &hlist, &hkey, &hvalue,
                        0, 0};
    if (walk_arrow(segs, nsegs, want_headers, scale, &sz, keep, &cols) < 0) goto done;
    PyObject *headers = Py_None;
    if (want_headers)
        headers = Py_BuildValue("(OnOnOOOnOO)", o[9], sz.header_nulls, o[10], sz.headers, o[12],
                                o[13], o[14], sz.hvalue_nulls, o[15], o[16]);
    else
        Py_INCREF(headers);
    if (!headers) goto done;
    result = Py_BuildValue("(nOOO(OnOO)(OnOO)N)", sz.n, o[0], o[1], o[2], o[3], sz.key_nulls,
                           o[4], o[5], o[6], sz.value_nulls, o[7], o[8], headers);
done:
    for (int i = 0; i < 17; i++) Py_XDECREF(o[i]);
    PyMem_Free(keep);
    release_segments(segs, nsegs);
    return result;
}

/* ----- records (the consumer) -------------------------------------------------------------- */

static PyObject *header_list(const segment *s, int index, const record *r, const uint8_t *end) {
    PyObject *list = PyList_New(r->header_count);
    if (!list) return NULL;
    const uint8_t *h = r->headers, *k = NULL, *v = NULL;
    int32_t kl = 0, vl = 0;
    for (int32_t j = 0; j < r->header_count; j++) {
        read_header(&h, end, &k, &kl, &v, &vl);
        PyObject *name = PyUnicode_DecodeUTF8((const char *)k, kl, "strict");
        if (!name) {
            Py_DECREF(list);
            PyErr_Clear();
            return fail(s, index, "a header key is not UTF-8");
        }
        PyObject *val = v ? PyBytes_FromStringAndSize((const char *)v, vl) : Py_NewRef(Py_None);
        PyObject *pair = val ? PyTuple_Pack(2, name, val) : NULL;
        Py_DECREF(name);
        Py_XDECREF(val);
        if (!pair) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, j, pair);
    }
    return list;
}

static inline PyObject *bytes_or_none(const uint8_t *p, int32_t len) {
    if (!p) return Py_NewRef(Py_None);
    return PyBytes_FromStringAndSize((const char *)p, len);
}

static PyObject *make_record(PyTypeObject *cls, PyObject *topic, PyObject *partition,
                             PyObject *stamp, const segment *s, int i, const record *r,
                             const uint8_t *end) {
    PyObject *t = cls->tp_alloc(cls, 7);
    if (!t) return NULL;
    PyObject **items = ((PyTupleObject *)t)->ob_item;
    items[0] = Py_NewRef(topic);
    items[1] = Py_NewRef(partition);
    items[3] = Py_NewRef(stamp);
    if (!(items[2] = PyLong_FromLongLong(s->base_offset + r->offset_delta))) goto fail;
    if (!(items[4] = bytes_or_none(r->key, r->key_len))) goto fail;
    if (!(items[5] = bytes_or_none(r->value, r->value_len))) goto fail;
    if (r->header_count) {
        if (!(items[6] = header_list(s, i, r, end))) goto fail;
    } else {
        items[6] = Py_NewRef(Py_None);
        PyObject_GC_UnTrack(t); /* str, int, bytes and None only: it can be in no cycle */
    }
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

static PyObject *records(PyObject *self, PyObject *args) {
    PyObject *cls, *topic, *partition, *list;
    if (!PyArg_ParseTuple(args, "O!UO!O!", &PyType_Type, &cls, &topic, &PyLong_Type, &partition,
                          &PyList_Type, &list))
        return NULL;
    PyTypeObject *type = (PyTypeObject *)cls;
    if (!PyType_IsSubtype(type, &PyTuple_Type) || type->tp_itemsize != sizeof(PyObject *)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a tuple subclass (a NamedTuple)");
        return NULL;
    }
    Py_ssize_t nsegs, total = 0;
    segment *segs = parse_segments(list, &nsegs);
    if (!segs) return NULL;
    for (Py_ssize_t i = 0; i < nsegs; i++) /* at most: fewer when compaction left gaps */
        total += (Py_ssize_t)(segs[i].hi - segs[i].lo < segs[i].count ? segs[i].hi - segs[i].lo
                                                                       : segs[i].count);
    PyObject *out = PyList_New(total), *stamp = NULL;
    int64_t stamp_value = 0;
    Py_ssize_t at = 0;
    if (!out) goto done;
    for (Py_ssize_t si = 0; si < nsegs; si++) {
        segment *s = &segs[si];
        const uint8_t *p = (const uint8_t *)s->view.buf + s->start;
        const uint8_t *end = (const uint8_t *)s->view.buf + s->end;
        int32_t prev = -1;
        for (int i = 0; i < s->count; i++) {
            record r;
            const char *err = read_next(&p, end, &prev, s->last_delta, &r);
            if (err) goto bad;
            if (r.offset_delta < s->lo || r.offset_delta >= s->hi) continue;
            int64_t ts = stamp_of(s, &r);
            if (!stamp || ts != stamp_value) { /* records of a batch mostly share one */
                Py_XDECREF(stamp);
                if (!(stamp = PyLong_FromLongLong(ts))) goto error;
                stamp_value = ts;
            }
            PyObject *rec = make_record(type, topic, partition, stamp, s, i, &r, end);
            if (!rec) goto error;
            PyList_SET_ITEM(out, at++, rec);
            continue;
        bad:
            fail(s, i, err);
            goto error;
        }
        if (p != end) {
            fail(s, s->count, "bytes follow the last record");
            goto error;
        }
    }
    if (at < total) /* the unset tail (NULLs) is cut: the list was never seen */
        Py_SET_SIZE(out, at);
    goto done;
error:
    Py_CLEAR(out); /* the unset tail of the list is NULL, which list_dealloc skips */
done:
    Py_XDECREF(stamp);
    release_segments(segs, nsegs);
    return out;
}

/* ----- keep_arenas: freed pymalloc arenas kept for reuse ----------------------------------- */

/* A consumer allocates and frees records by the hundred thousand per poll: pymalloc hands its
 * emptied 1 MiB arenas back to the OS and maps fresh ones for the next poll, and the kernel's
 * page faults and page zeroing then cost about as much as making the records. keep_arenas(n)
 * puts a wrapper around the arena allocator that keeps up to n freed arenas for reuse (all
 * calls are under the GIL; sizes other than the first seen go straight through). */
#define ARENAS_KEPT_MAX 256
static PyObjectArenaAllocator base_arenas;
static void *kept[ARENAS_KEPT_MAX];
static int kept_count, kept_max;
static size_t kept_size;

static void *arena_alloc(void *ctx, size_t size) {
    (void)ctx;
    if (kept_count && size == kept_size) return kept[--kept_count];
    return base_arenas.alloc(base_arenas.ctx, size);
}

static void arena_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    if (kept_size == 0) kept_size = size;
    if (kept_count < kept_max && size == kept_size) {
        kept[kept_count++] = ptr;
        return;
    }
    base_arenas.free(base_arenas.ctx, ptr, size);
}

static PyObject *keep_arenas(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n > ARENAS_KEPT_MAX) {
        PyErr_Format(PyExc_ValueError, "keep_arenas takes 0 to %d", ARENAS_KEPT_MAX);
        return NULL;
    }
    if (!base_arenas.alloc) {
        PyObjectArenaAllocator ours = {NULL, arena_alloc, arena_free};
        PyObject_GetArenaAllocator(&base_arenas);
        PyObject_SetArenaAllocator(&ours);
    }
    kept_max = (int)n;
    while (kept_count > kept_max) base_arenas.free(base_arenas.ctx, kept[--kept_count], kept_size);
    Py_RETURN_NONE;
}

/* ----- keep_heap: large buffers reused from the heap --------------------------------------- */

/* A fetch answer of some MiB is read into a buffer of its own, and its records section is
 * copied out by msgpack: two large blocks made and freed per answer. glibc maps a block past
 * its mmap threshold fresh from the kernel and unmaps it when freed; its dynamic threshold
 * follows the largest block freed so far, but the freed heap top is trimmed back to the OS
 * past twice that, so each answer page-faulted its buffers in again (a quarter of a Spark
 * task's CPU per record, measured). keep_heap(mmap, trim) sets both thresholds: blocks below
 * `mmap` come from the heap, and up to `trim` bytes of freed heap top stay mapped for the next
 * answer. glibc only; elsewhere it returns False and changes nothing. */
static PyObject *keep_heap(PyObject *self, PyObject *args) {
    (void)self;
    int mmap_threshold, trim_threshold;
    if (!PyArg_ParseTuple(args, "ii", &mmap_threshold, &trim_threshold)) return NULL;
    if (mmap_threshold <= 0 || trim_threshold <= 0) {
        PyErr_SetString(PyExc_ValueError, "keep_heap takes two positive sizes");
        return NULL;
    }
#ifdef __GLIBC__
    if (mallopt(M_MMAP_THRESHOLD, mmap_threshold) && mallopt(M_TRIM_THRESHOLD, trim_threshold))
        Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"keep_arenas", keep_arenas, METH_O,
     "keep_arenas(n): keep up to n freed pymalloc arenas for reuse (0: none)."},
    {"keep_heap", keep_heap, METH_VARARGS,
     "keep_heap(mmap_threshold, trim_threshold): glibc's malloc keeps large blocks on its heap."},
    {"arrow_columns", arrow_columns, METH_VARARGS,
     "arrow_columns(segments, want_headers, timestamp_scale): the records as Arrow buffers."},
    {"records", records, METH_VARARGS,
     "records(cls, topic, partition, segments): the records as cls tuples."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocol._records",
                                    "Kafka v2 records walked at C speed (see the source).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__records(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    DecodeError = PyErr_NewException("protocol._records.DecodeError", PyExc_ValueError, NULL);
    if (!DecodeError || PyModule_AddObjectRef(m, "DecodeError", DecodeError) < 0 ||
        PyModule_AddIntConstant(m, "KEPT_RECORDS_MAX", KEPT_RECORDS_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
