/* One-pass statistics of a float32 CPU tensor, read in place: the PyTorch hook's CPU path.
 *
 * On CPU a torch reduction is a dispatch of several microseconds plus a pass over memory, and
 * the hook needs about ten of them per tensor (and a copy into a packed buffer before them).
 * This kernel reads each tensor once, where it lies, accumulates its moments in float32 over
 * blocks of 512 values and in float64 across blocks (a block whose float32 sums overflow,
 * underflow or meet a NaN is read again in float64), and writes its row of statistic columns
 * (`run_format.STAT_COLUMNS`: count nan inf zero min max mean std abs_mean l2 update_l2 distance_l2)
 * as float32. For a tracked parameter the same pass compares it with its previous and first
 * saved copies, counts the changed elements of each unit (row of dim 0) for the Tier-1 "moved"
 * vector and refreshes the previous copy. Optionally it fills the 64-bin log2-magnitude
 * histogram (Tier 1). The GIL is released while it runs.
 *
 * Definitions are those of `trainguard/store/stats.py` (tests compare every column with it):
 * a NaN makes min, max and the sums NaN; NaN/Inf are counted element by element only when the
 * |x| sum is not finite (a finite sum proves both counts zero); the variance comes from the sums
 * unless that cancels badly, when an exact float64 second pass runs. Every column is within about
 * 1e-6 of numpy's float64 result (the std within 1e-5).
 *
 * Python never hands this module anything but addresses and sizes it checked
 * (`trainguard/capture/torch/c_kernel.py`); it allocates nothing and keeps no state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { C_COUNT, C_NAN, C_INF, C_ZERO, C_MIN, C_MAX, C_MEAN, C_STD, C_ABS_MEAN, C_L2, C_UPDATE, C_DISTANCE, N_COLUMNS };
#define HIST_BINS 64

/* The one-pass variance (sum of squares minus sum times mean) is trusted while it is at least this
 * share of the sum of squares: the float32 block sums are good to about 1e-7 of it, so the std keeps
 * about 1e-5 (measured: 5e-6 at worst) there. Below it (a mean over about 10 stds), an exact float64
 * pass recomputes it. */
#define ONE_PASS_VARIANCE_MIN 0.01

/* Values per float32 partial sum (see `plain`); its count of zeros and changed values stays exact. */
#define BLOCK 512

/* A block's float32 sum of squares below this is read again in float64: its squares may have left
 * float32's normal range (below 1.2e-38; flushed to zero where denormals are), which costs at most
 * BLOCK * 1.2e-38 of it, 6e-16 of this. */
#define FLOAT32_TRUSTED_MIN 1e-20f

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define TG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TG_CLONES
#endif

typedef struct {
    double sum, abs, sq, zero, upd, dist;
    float min, max;
} moments_t;

/* One value's share of the moments, summed in ACC (float within a block, double on the exact path;
 * ABS is its fabs):
 * v = x[i] into s, a, q, z, mn, mx; TRACKED_TERMS adds u, t (squared distances to prev and first)
 * and c (differs from prev; NaN != NaN: a NaN element counts as changed, as torch.ne). */
#define PLAIN_TERMS(ACC, ABS)             \
    float v = x[i];                       \
    ACC d = (ACC)v;                       \
    s += d;                               \
    a += ABS(d);                          \
    q += d * d;                           \
    z += (v == 0.0f) ? (ACC)1 : (ACC)0;   \
    mn = v < mn ? v : mn;                 \
    mx = v > mx ? v : mx;
#define TRACKED_TERMS(ACC, ABS)           \
    PLAIN_TERMS(ACC, ABS)                 \
    float p = prev[i];                    \
    ACC du = d - (ACC)p, dt = d - (ACC)first[i]; \
    u += du * du;                         \
    t += dt * dt;                         \
    c += (v != p) ? (ACC)1 : (ACC)0;
#define ADD_PLAIN(m)                                                   \
    do {                                                               \
        (m)->sum += s; (m)->abs += a; (m)->sq += q; (m)->zero += z;    \
        (m)->min = mn < (m)->min ? mn : (m)->min;                      \
        (m)->max = mx > (m)->max ? mx : (m)->max;                      \
    } while (0)

/* float64 moments of x[0:n]: the exact path, for blocks whose float32 sums cannot be trusted */
TG_CLONES
static void plain64(const float *restrict x, Py_ssize_t n, moments_t *m)
{
    double s = 0, a = 0, q = 0, z = 0;
    float mn = INFINITY, mx = -INFINITY;
#pragma omp simd reduction(+ : s, a, q, z) reduction(min : mn) reduction(max : mx)
    for (Py_ssize_t i = 0; i < n; i++) {
        PLAIN_TERMS(double, fabs)
    }
    ADD_PLAIN(m);
}

/* `plain64`, plus squared distances to `prev` and `first`, the count of elements that differ from
 * `prev` (returned), and `prev` refreshed with `x`. */
TG_CLONES
static double tracked64(const float *restrict x, float *restrict prev, const float *restrict first,
                        Py_ssize_t n, moments_t *m)
{
    double s = 0, a = 0, q = 0, z = 0, u = 0, t = 0, c = 0;
    float mn = INFINITY, mx = -INFINITY;
#pragma omp simd reduction(+ : s, a, q, z, u, t, c) reduction(min : mn) reduction(max : mx)
    for (Py_ssize_t i = 0; i < n; i++) {
        TRACKED_TERMS(double, fabs)
        prev[i] = v;
    }
    ADD_PLAIN(m);
    m->upd += u; m->dist += t;
    return c;
}

/* Whether a block's float32 sum of squares `q` (of values whose |x| sum, or changed count, is `a`)
 * can be trusted: finite (no overflow, no NaN/Inf in the block) and, unless it is all zeros, clear
 * of float32's underflow. */
static inline int trusted(float q, float a)
{
    return isfinite(q) && (q >= FLOAT32_TRUSTED_MIN || a == 0.0f);
}

/* The moments of x[0:n] with float32 partial sums over blocks of BLOCK values (half the work of
 * float64 per value, so twice the values per vector instruction), each added to the float64 totals;
 * a block whose float32 sums overflow, underflow or hold a NaN/Inf is read again in float64. */
TG_CLONES
static void plain(const float *restrict x, Py_ssize_t n, moments_t *m)
{
    for (Py_ssize_t b = 0; b < n; b += BLOCK, x += BLOCK) {
        Py_ssize_t k = n - b < BLOCK ? n - b : BLOCK;
        float s = 0, a = 0, q = 0, z = 0, mn = INFINITY, mx = -INFINITY;
#pragma omp simd reduction(+ : s, a, q, z) reduction(min : mn) reduction(max : mx)
        for (Py_ssize_t i = 0; i < k; i++) {
            PLAIN_TERMS(float, fabsf)
        }
        if (trusted(q, a))
            ADD_PLAIN(m);
        else
            plain64(x, k, m);
    }
}

/* `tracked64`'s results, block by block as `plain`: `prev` is refreshed once a block's sums are
 * taken, so a block read again in float64 still sees the previous copy. */
TG_CLONES
static double tracked(const float *restrict x, float *restrict prev, const float *restrict first,
                      Py_ssize_t n, moments_t *m)
{
    double changed = 0;
    for (Py_ssize_t b = 0; b < n; b += BLOCK, x += BLOCK, prev += BLOCK, first += BLOCK) {
        Py_ssize_t k = n - b < BLOCK ? n - b : BLOCK;
        float s = 0, a = 0, q = 0, z = 0, u = 0, t = 0, c = 0, mn = INFINITY, mx = -INFINITY;
#pragma omp simd reduction(+ : s, a, q, z, u, t, c) reduction(min : mn) reduction(max : mx)
        for (Py_ssize_t i = 0; i < k; i++) {
            TRACKED_TERMS(float, fabsf)
        }
        if (!trusted(q, a) || !trusted(u, c) || !trusted(t, t)) {
            changed += tracked64(x, prev, first, k, m);
            continue;
        }
        memcpy(prev, x, (size_t)k * sizeof *x);
        ADD_PLAIN(m);
        m->upd += u; m->dist += t;
        changed += c;
    }
    return changed;
}

TG_CLONES
static double deviation(const float *restrict x, Py_ssize_t n, double mean)
{
    double dev = 0;
#pragma omp simd reduction(+ : dev)
    for (Py_ssize_t i = 0; i < n; i++) {
        double d = (double)x[i] - mean;
        dev += d * d;
    }
    return dev;
}

static void nonfinite(const float *x, Py_ssize_t n, double *nan, double *inf)
{
    Py_ssize_t a = 0, b = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        a += isnan(x[i]) ? 1 : 0;
        b += isinf(x[i]) ? 1 : 0;
    }
    *nan = (double)a;
    *inf = (double)b;
}

/* The bin of each of m <= HIST_CHUNK values: 0 for exact zeros, b (1..63) for |x| in
 * [2^(b-40), 2^(b-39)) from the exponent bits alone, clamped (denormals land in bin 1), and
 * HIST_BINS for NaN and Inf, which are left out. Branch-free, so it vectorises. */
#define HIST_CHUNK 1024
TG_CLONES
static void bins_of(const float *restrict x, Py_ssize_t m, int offset, uint8_t *restrict bins)
{
#pragma omp simd
    for (Py_ssize_t i = 0; i < m; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        int e = (int)((u >> 23) & 0xFF);
        int b = e - offset;
        b = b < 1 ? 1 : b;
        b = b > HIST_BINS - 1 ? HIST_BINS - 1 : b;
        b = (u & 0x7FFFFFFFu) == 0 ? 0 : b;
        b = e == 0xFF ? HIST_BINS : b;
        bins[i] = (uint8_t)b;
    }
}

static void histogram(const float *x, Py_ssize_t n, int offset, float *out)
{
    /* four interleaved tables, so consecutive increments do not wait on each other */
    Py_ssize_t counts[4][HIST_BINS + 1];
    uint8_t bins[HIST_CHUNK];
    memset(counts, 0, sizeof counts);
    for (Py_ssize_t s = 0; s < n; s += HIST_CHUNK) {
        Py_ssize_t m = n - s < HIST_CHUNK ? n - s : HIST_CHUNK, i = 0;
        bins_of(x + s, m, offset, bins);
        for (; i + 4 <= m; i += 4) {
            counts[0][bins[i]]++;
            counts[1][bins[i + 1]]++;
            counts[2][bins[i + 2]]++;
            counts[3][bins[i + 3]]++;
        }
        for (; i < m; i++)
            counts[0][bins[i]]++;
    }
    for (int b = 0; b < HIST_BINS; b++)
        out[b] = (float)(counts[0][b] + counts[1][b] + counts[2][b] + counts[3][b]);
}

/* Per unit c of an activation viewed as [samples, units, rest] (units = dim 1): the share of its
 * samples x rest values that are active (> 0, mode 0) or saturated (sigmoid < 0.01 or > 0.99,
 * mode 1; tanh |x| > 0.99, mode 2). NaN is neither. */
static inline float flag(float v, int mode)
{
    return mode == 0 ? (v > 0.0f ? 1.0f : 0.0f)
         : mode == 1 ? ((v < 0.01f || v > 0.99f) ? 1.0f : 0.0f)
                     : (fabsf(v) > 0.99f ? 1.0f : 0.0f);
}

TG_CLONES
static void unit_shares(const float *restrict x, Py_ssize_t samples, Py_ssize_t units, Py_ssize_t rest,
                        int mode, float *restrict out)
{
    for (Py_ssize_t c = 0; c < units; c++)
        out[c] = 0.0f;
    if (rest == 1) {  /* [samples, units]: count across units, one sample row at a time */
        for (Py_ssize_t i = 0; i < samples; i++) {
            const float *row = x + i * units;
#pragma omp simd
            for (Py_ssize_t c = 0; c < units; c++)
                out[c] += flag(row[c], mode);
        }
    } else {
        for (Py_ssize_t i = 0; i < samples; i++)
            for (Py_ssize_t c = 0; c < units; c++) {
                const float *block = x + (i * units + c) * rest;
                float k = 0.0f;
#pragma omp simd reduction(+ : k)
                for (Py_ssize_t r = 0; r < rest; r++)
                    k += flag(block[r], mode);
                out[c] += k;
            }
    }
    double per = (double)samples * (double)rest;
    for (Py_ssize_t c = 0; c < units; c++)
        out[c] = (float)(out[c] / per);
}

/* The statistic columns of one tensor into o[N_COLUMNS] (see `reduce`); returns whether it holds a NaN or
 * Inf. The GIL is not needed. */
static int columns(const float *x, Py_ssize_t n, float *prev, const float *first, int fresh, Py_ssize_t units,
                    float *mv, float *hist, int offset, float *o)
{
    moments_t m = {0, 0, 0, 0, 0, 0, INFINITY, -INFINITY};
    if (prev && first) {
        Py_ssize_t per = n / units;
        for (Py_ssize_t r = 0; r < units; r++) {
            double c = tracked(x + r * per, prev + r * per, first + r * per, per, &m);
            if (mv)
                mv[r] = fresh ? NAN : (float)(c / (double)per);
        }
    } else {
        plain(x, n, &m);
    }
    double nan = 0, inf = 0;
    if (!isfinite(m.abs))
        nonfinite(x, n, &nan, &inf);
    double count = (double)n, mean = m.sum / count, dev = m.sq - m.sum * mean;
    if (isfinite(dev) && !(dev >= ONE_PASS_VARIANCE_MIN * m.sq))
        dev = deviation(x, n, mean);
    /* float32 as the columns are stored: beyond its range reads as inf, which is what it is */
    o[C_COUNT] = (float)count;
    o[C_NAN] = (float)nan;
    o[C_INF] = (float)inf;
    o[C_ZERO] = (float)m.zero;
    o[C_MIN] = nan > 0 ? NAN : m.min;
    o[C_MAX] = nan > 0 ? NAN : m.max;
    o[C_MEAN] = (float)mean;
    o[C_STD] = isnan(dev) ? NAN : (float)sqrt((dev > 0 ? dev : 0.0) / count);
    o[C_ABS_MEAN] = (float)(m.abs / count);
    o[C_L2] = (float)sqrt(m.sq);
    o[C_UPDATE] = prev && first && !fresh ? (float)sqrt(m.upd) : NAN;
    o[C_DISTANCE] = prev && first ? (float)sqrt(m.dist) : NAN;
    if (hist)
        histogram(x, n, offset, hist);
    return nan + inf > 0;
}

static int writable(Py_buffer *buf, Py_ssize_t floats, const char *what)
{
    if (buf->len < floats * (Py_ssize_t)sizeof(float)) {
        PyErr_Format(PyExc_ValueError, "%s needs room for %zd float32 values, got %zd bytes", what,
                     floats, buf->len);
        return 0;
    }
    return 1;
}

/* The kernel cannot know what lies at an address; Python checked that (`native.usable`: a dense,
 * contiguous float32 CPU tensor whose storage holds every element read). Here only what an address
 * and a count can show is checked again, so a bad spec raises instead of reading: a null or
 * misaligned address, or a count whose bytes overflow. */
static int address_ok(uint64_t at, int64_t n, const char *what)
{
    if (at == 0 || at % sizeof(float) != 0 || n < 1 || (uint64_t)n > (UINT64_MAX - at) / sizeof(float)) {
        PyErr_Format(PyExc_ValueError, "%s: not the address of %lld float32 values", what, (long long)n);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(reduce_doc,
"reduce(x, n, out, row, prev, first, fresh, hist, hist_offset, moved)\n--\n\n"
"Statistic columns of the n > 0 float32 values at address x into row `row` of out (float32[R, 12],\n"
"STAT_COLUMNS order).\n"
"prev/first: addresses of the previous and first saved copies (0: untracked; update and distance\n"
"stay NaN); prev is refreshed. fresh: no previous save yet (update and moved are NaN).\n"
"hist: None or float32[64] for the log2 histogram (bin = exponent - hist_offset).\n"
"moved: None or float32[units]: per unit (n/units consecutive values) the share that changed.\n"
"Returns whether the tensor holds a NaN or Inf.");

static PyObject *cstats_reduce(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long xa, pa, fa;
    Py_ssize_t n, row;
    int fresh, offset;
    Py_buffer out, hist = {0}, moved = {0};
    PyObject *hist_obj, *moved_obj;
    if (!PyArg_ParseTuple(args, "Knw*nKKpOiO", &xa, &n, &out, &row, &pa, &fa, &fresh, &hist_obj, &offset,
                          &moved_obj))
        return NULL;
    PyObject *result = NULL;
    int have_hist = hist_obj != Py_None, have_moved = moved_obj != Py_None;
    if (have_hist && PyObject_GetBuffer(hist_obj, &hist, PyBUF_WRITABLE) < 0)
        goto done_out;
    if (have_moved && PyObject_GetBuffer(moved_obj, &moved, PyBUF_WRITABLE) < 0)
        goto done_hist;
    Py_ssize_t units = have_moved ? moved.len / (Py_ssize_t)sizeof(float) : 1;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "an empty tensor has no statistics to compute here");
        goto done;
    }
    if (row < 0 || !writable(&out, (row + 1) * N_COLUMNS, "out") || (have_hist && !writable(&hist, HIST_BINS, "hist")))
        goto done;
    if (!address_ok(xa, n, "x") || (pa && !address_ok(pa, n, "prev")) || (fa && !address_ok(fa, n, "first")))
        goto done;
    if (have_moved && (units < 1 || n % units != 0 || !pa)) {
        PyErr_SetString(PyExc_ValueError, "moved needs a tracked tensor whose size divides into its units");
        goto done;
    }
    const float *x = (const float *)(uintptr_t)xa;
    float *prev = (float *)(uintptr_t)pa;
    const float *first = (const float *)(uintptr_t)fa;
    float *o = (float *)out.buf + row * N_COLUMNS, *mv = have_moved ? (float *)moved.buf : NULL;

    int bad;
    Py_BEGIN_ALLOW_THREADS
    bad = columns(x, n, prev, first, fresh, units, mv, have_hist ? (float *)hist.buf : NULL, offset, o);
    Py_END_ALLOW_THREADS

    result = PyBool_FromLong(bad);
done:
    if (have_moved)
        PyBuffer_Release(&moved);
done_hist:
    if (have_hist)
        PyBuffer_Release(&hist);
done_out:
    PyBuffer_Release(&out);
    return result;
}

PyDoc_STRVAR(reduce_many_doc,
"reduce_many(spec, out, row)\n--\n\n"
"`reduce` for several tensors in one call, without histograms or moved shares: spec is a flat list of\n"
"ints, (address, n, prev, first, fresh) per tensor; their rows go to out[row:row + T]. Returns how many\n"
"of them hold a NaN or Inf.");

#define SPEC_ON_STACK 64 /* tensors whose spec fits on the stack; more take a heap copy */

static PyObject *cstats_reduce_many(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *spec_obj;
    Py_buffer out;
    Py_ssize_t row;
    if (!PyArg_ParseTuple(args, "O!w*n", &PyList_Type, &spec_obj, &out, &row))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t len = PyList_GET_SIZE(spec_obj), count = len / 5;
    int64_t stack[5 * SPEC_ON_STACK], *sp = stack;
    if (len != 5 * count || row < 0) {
        PyErr_SetString(PyExc_ValueError, "spec needs 5 ints per tensor");
        goto done;
    }
    if (!writable(&out, (row + count) * N_COLUMNS, "out"))
        goto done;
    if (count > SPEC_ON_STACK && !(sp = PyMem_Malloc((size_t)len * sizeof *sp))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        sp[i] = PyLong_AsLongLong(PyList_GET_ITEM(spec_obj, i));
        if (sp[i] == -1 && PyErr_Occurred())
            goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        if (sp[5 * i + 1] < 1 || (sp[5 * i + 2] == 0) != (sp[5 * i + 3] == 0)) {
            PyErr_SetString(PyExc_ValueError, "each tensor needs n > 0, and both saved copies or neither");
            goto done;
        } else if (!address_ok((uint64_t)sp[5 * i], sp[5 * i + 1], "x") ||
                   (sp[5 * i + 2] && (!address_ok((uint64_t)sp[5 * i + 2], sp[5 * i + 1], "prev") ||
                                      !address_ok((uint64_t)sp[5 * i + 3], sp[5 * i + 1], "first"))))
            goto done;
    float *o = (float *)out.buf + row * N_COLUMNS;
    Py_ssize_t bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        const int64_t *t = sp + 5 * i;
        bad += columns((const float *)(uintptr_t)t[0], (Py_ssize_t)t[1], (float *)(uintptr_t)t[2],
                       (const float *)(uintptr_t)t[3], (int)t[4], 1, NULL, NULL, 0, o + i * N_COLUMNS);
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(bad);
done:
    if (sp != stack)
        PyMem_Free(sp);
    PyBuffer_Release(&out);
    return result;
}

PyDoc_STRVAR(units_doc,
"units(x, samples, units, rest, mode, out)\n--\n\n"
"Per unit of the float32 activation at address x, viewed as [samples, units, rest], the share of\n"
"active (mode 0: > 0) or saturated (1: sigmoid < 0.01 or > 0.99; 2: tanh |x| > 0.99) values,\n"
"into out (float32[units]).");

static PyObject *cstats_units(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long xa;
    Py_ssize_t samples, units, rest;
    int mode;
    Py_buffer out;
    if (!PyArg_ParseTuple(args, "Knnniw*", &xa, &samples, &units, &rest, &mode, &out))
        return NULL;
    PyObject *result = NULL;
    if (samples < 1 || units < 1 || rest < 1 || mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_ValueError, "units needs samples, units and rest >= 1 and a mode of 0, 1 or 2");
        goto done;
    }
    if (!writable(&out, units, "out") || !address_ok(xa, samples * units * rest, "x"))
        goto done;
    const float *x = (const float *)(uintptr_t)xa;
    float *o = (float *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    unit_shares(x, samples, units, rest, mode, o);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"reduce", cstats_reduce, METH_VARARGS, reduce_doc},
    {"units", cstats_units, METH_VARARGS, units_doc},
    {"reduce_many", cstats_reduce_many, METH_VARARGS, reduce_many_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_cstats",
    .m_doc = "One-pass statistics of float32 CPU tensors (see c_kernel.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__cstats(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "N_COLUMNS", N_COLUMNS) < 0 || PyModule_AddIntConstant(m, "HIST_BINS", HIST_BINS) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
