/* The log cleaner's per-record work, in C (broker/log/cleaner/cleaner.py calls it per batch).
 *
 * Input: a batch's records section, decompressed (protocol/batch.py gives the record layout:
 * varint length, int8 attributes, varlong timestamp delta, varint offset delta, varint key
 * length + key, varint value length + value, headers), its record count and base offset.
 *
 * Every record's offset delta must be above the previous one's and at most the batch's
 * last_offset_delta (`last`), as a cleaned batch's are: a record that breaks this raises
 * ValueError, since nothing the cleaner keeps or drops may come from an offset the batch does
 * not span. `produced` (a producer's batch) wants them dense, 0, 1, 2, ... (protocol/batch.py),
 * and names the records that are not.
 *
 * map_keys(section, count, base, last, lo, hi, found) -> records
 *     found[key] = offset for every record with a key whose offset is in [lo, hi): the
 *     cleaner's offset map over the dirty section (plan.OffsetMap bounds it per segment).
 *
 * retain(section, count, base, last, latest, now_ms, horizon_ms) -> (kept, kept_count,
 *                                                              kept_tombstones)
 *     plan.retain for every record: a keyless record goes; a record whose key maps to a later
 *     offset in `latest` goes; a tombstone goes when horizon_ms >= 0 and now_ms >= horizon_ms.
 *     `kept` is the kept records' bytes back to back, each copied as it is (offset deltas
 *     kept), ready to be the records section of the rebuilt batch.
 *
 * produced(section, count, keys, first_ts, low, high) -> [(index, kind, value), ...]
 *     The records of a producer's batch that the leader refuses (Kafka's LogValidator names
 *     each one, KIP-467), at most one entry per record, in the batch's order: kind
 *     PRODUCED_OFFSET_DELTA (value: its offset delta) when it is not the record's index,
 *     else PRODUCED_KEYLESS when `keys` (a compacted topic) and it has no key, else
 *     PRODUCED_TIMESTAMP (value: first_ts + its timestamp delta) when that lies outside
 *     [low, high] (a record without a timestamp, -1, is not judged, as Kafka's). An empty list
 *     for a good batch, which costs no allocation but the list.
 *
 * A record that runs past the section, or a malformed varint, raises ValueError naming its
 * index: the batch's CRC held, so this is a batch no producer could have written.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int64_t offset_delta, ts_delta;
    const uint8_t *key; /* NULL: a null key */
    Py_ssize_t key_len;
    int tombstone;
    const uint8_t *start, *end;
} rec;

static int read_varlong(const uint8_t **p, const uint8_t *end, int64_t *out) {
    uint64_t result = 0;
    int shift = 0;
    while (*p < end && shift <= 63) {
        uint8_t b = *(*p)++;
        result |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* The record at *p; *p moves past it. NULL, or the reason it is malformed. */
static const char *next_record(const uint8_t **p, const uint8_t *end, rec *r) {
    int64_t length, key_len, value_len;
    r->start = *p;
    if (read_varlong(p, end, &length) < 0) return "its length is malformed";
    if (length < 1 || length > end - *p) return "it runs past the section";
    const uint8_t *rend = *p + length;
    r->end = rend;
    (*p)++; /* attributes */
    if (read_varlong(p, rend, &r->ts_delta) < 0) return "its timestamp delta is malformed";
    if (read_varlong(p, rend, &r->offset_delta) < 0) return "its offset delta is malformed";
    if (read_varlong(p, rend, &key_len) < 0) return "its key length is malformed";
    if (key_len > rend - *p || key_len < -1) return "its key runs past it";
    r->key = key_len < 0 ? NULL : *p;
    r->key_len = key_len < 0 ? 0 : (Py_ssize_t)key_len;
    *p += r->key_len;
    if (read_varlong(p, rend, &value_len) < 0) return "its value length is malformed";
    if (value_len > rend - *p || value_len < -1) return "its value runs past it";
    r->tombstone = value_len < 0;
    *p = rend;
    return NULL;
}

/* The record's offset delta against the one before it (-1 at first) and the batch's span. */
static const char *check_delta(const rec *r, int64_t previous, int64_t last) {
    if (r->offset_delta <= previous) return "its offset delta does not increase";
    if (r->offset_delta > last) return "its offset delta is past the batch's last";
    return NULL;
}

static PyObject *fail(int index, const char *why) {
    PyErr_Format(PyExc_ValueError, "record %d of the batch: %s", index, why);
    return NULL;
}

static PyObject *map_keys(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int count;
    long long base, last, lo, hi;
    PyObject *found;
    if (!PyArg_ParseTuple(args, "y*iLLLLO!", &buf, &count, &base, &last, &lo, &hi, &PyDict_Type,
                          &found))
        return NULL;
    const uint8_t *p = buf.buf, *end = p + buf.len;
    rec r;
    int i;
    int64_t previous = -1;
    for (i = 0; i < count; i++) {
        const char *why = next_record(&p, end, &r);
        if (!why) why = check_delta(&r, previous, last);
        previous = r.offset_delta;
        if (why) {
            PyBuffer_Release(&buf);
            return fail(i, why);
        }
        long long offset = base + r.offset_delta;
        if (!r.key || offset < lo || offset >= hi) continue;
        PyObject *key = PyBytes_FromStringAndSize((const char *)r.key, r.key_len);
        PyObject *value = key ? PyLong_FromLongLong(offset) : NULL;
        if (!value || PyDict_SetItem(found, key, value) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            PyBuffer_Release(&buf);
            return NULL;
        }
        Py_DECREF(key);
        Py_DECREF(value);
    }
    PyBuffer_Release(&buf);
    return PyLong_FromLong(i);
}

enum { PRODUCED_OFFSET_DELTA = 0, PRODUCED_KEYLESS = 1, PRODUCED_TIMESTAMP = 2 };

/* Append (index, kind, value) to `out`; -1 on a Python error. */
static int refuse(PyObject *out, int index, int kind, long long value) {
    PyObject *item = Py_BuildValue("(iiL)", index, kind, value);
    if (!item) return -1;
    int rc = PyList_Append(out, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *produced(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int count, keys;
    long long first_ts, low, high;
    if (!PyArg_ParseTuple(args, "y*ipLLL", &buf, &count, &keys, &first_ts, &low, &high))
        return NULL;
    PyObject *out = PyList_New(0);
    if (!out) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const uint8_t *p = buf.buf, *end = p + buf.len;
    rec r;
    for (int i = 0; i < count; i++) {
        const char *why = next_record(&p, end, &r);
        if (why) {
            Py_DECREF(out);
            PyBuffer_Release(&buf);
            return fail(i, why);
        }
        /* wrapping, as Java's long does: a delta that overflows cannot be in bounds anyway */
        long long ts = (long long)((uint64_t)first_ts + (uint64_t)r.ts_delta);
        int rc = 0;
        if (r.offset_delta != i)
            rc = refuse(out, i, PRODUCED_OFFSET_DELTA, (long long)r.offset_delta);
        else if (keys && !r.key)
            rc = refuse(out, i, PRODUCED_KEYLESS, 0);
        else if (ts != -1 && (ts < low || ts > high))
            rc = refuse(out, i, PRODUCED_TIMESTAMP, ts);
        if (rc < 0) {
            Py_DECREF(out);
            PyBuffer_Release(&buf);
            return NULL;
        }
    }
    PyBuffer_Release(&buf);
    return out;
}

static PyObject *retain(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int count;
    long long base, last, now_ms, horizon_ms;
    PyObject *latest;
    if (!PyArg_ParseTuple(args, "y*iLLO!LL", &buf, &count, &base, &last, &PyDict_Type, &latest,
                          &now_ms, &horizon_ms))
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, buf.len);
    if (!out) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    uint8_t *w = (uint8_t *)PyBytes_AS_STRING(out);
    const uint8_t *p = buf.buf, *end = p + buf.len;
    int kept = 0, tombstones = 0;
    int drop_tombstones = horizon_ms >= 0 && now_ms >= horizon_ms;
    rec r;
    int64_t previous = -1;
    for (int i = 0; i < count; i++) {
        const char *why = next_record(&p, end, &r);
        if (!why) why = check_delta(&r, previous, last);
        previous = r.offset_delta;
        if (why) {
            Py_DECREF(out);
            PyBuffer_Release(&buf);
            return fail(i, why);
        }
        if (!r.key || (r.tombstone && drop_tombstones)) continue;
        PyObject *key = PyBytes_FromStringAndSize((const char *)r.key, r.key_len);
        if (!key) {
            Py_DECREF(out);
            PyBuffer_Release(&buf);
            return NULL;
        }
        PyObject *found = PyDict_GetItemWithError(latest, key); /* borrowed */
        Py_DECREF(key);
        if (!found && PyErr_Occurred()) {
            Py_DECREF(out);
            PyBuffer_Release(&buf);
            return NULL;
        }
        if (found && base + r.offset_delta < PyLong_AsLongLong(found)) continue;
        memcpy(w, r.start, (size_t)(r.end - r.start));
        w += r.end - r.start;
        kept++;
        tombstones += r.tombstone;
    }
    PyBuffer_Release(&buf);
    Py_ssize_t size = (Py_ssize_t)(w - (uint8_t *)PyBytes_AS_STRING(out));
    if (_PyBytes_Resize(&out, size) < 0) return NULL;
    return Py_BuildValue("(Nii)", out, kept, tombstones);
}

static PyMethodDef methods[] = {
    {"map_keys", map_keys, METH_VARARGS, "found[key] = offset for keyed records in [lo, hi)."},
    {"retain", retain, METH_VARARGS, "The records the cleaner keeps, back to back."},
    {"produced", produced, METH_VARARGS, "The records of a producer's batch to refuse."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_compact", NULL, -1, methods};

PyMODINIT_FUNC PyInit__compact(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "PRODUCED_OFFSET_DELTA", PRODUCED_OFFSET_DELTA) < 0 ||
        PyModule_AddIntConstant(m, "PRODUCED_KEYLESS", PRODUCED_KEYLESS) < 0 ||
        PyModule_AddIntConstant(m, "PRODUCED_TIMESTAMP", PRODUCED_TIMESTAMP) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
