/*
 * Half precision and long double checks for test_reduce_ops.cc.
 *
 * The references here share no code with gpu_reduce_ops.h: values are
 * decoded with ldexp, rounded to nearest even with nearbyint() on a
 * double (exact for binary16 and bfloat16 operands: double's 53 bits are
 * more than twice theirs plus two), and encoded again from frexp.  Where
 * the compiler has _Float16, its conversions are a second reference.
 * Long double values (NaN, infinities, zeros, subnormals, and x87
 * encodings that only raw bytes make: unnormals, pseudo-denormals) feed
 * the MPI_Reduce_local comparison in main().
 */
#ifndef TEST_HALF_H
#define TEST_HALF_H

/* the functor for (op, H) through the dispatcher, as the kernels reach it */
template <class H> struct half_apply2 {
    H a, b, r;
    template <gpu_op_t OP, class T> bool run()
    {
        if constexpr (std::is_same<T, H>::value) {
            r = gpu_red<OP, T>::apply(a, b);
            return true;
        } else {
            return false;
        }
    }
};

template <class H> static H gpu_dispatch_apply(gpu_op_t op, H a, H b)
{
    const gpu_dtype_t dt = std::is_same<H, gpu_f16>::value ? GPU_DT_F16 : GPU_DT_BF16;
    half_apply2<H> v = { a, b, H{ 0xffff } };
    if (!gpu_dispatch(op, dt, v)) {
        nfail++;
        printf("FAIL: %s/%s not dispatched\n", gpu_op_name(op), gpu_dtype_name(dt));
    }
    return v.r;
}

/* bits (mbits of significand, exponent bias) -> exact double */
static double ref_decode(uint16_t h, int mbits, int bias)
{
    const int ebits = 15 - mbits, emax_field = (1 << ebits) - 1;
    const int e = (h >> mbits) & emax_field;
    const double m = (double) (h & ((1u << mbits) - 1));
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (e == emax_field) {
        return 0 == m ? sign * INFINITY : NAN;
    }
    if (0 == e) {
        return sign * ldexp(m, 1 - bias - mbits);
    }
    return sign * ldexp(1.0 + ldexp(m, -mbits), e - bias);
}

/* round v to the format, to nearest even; infinity past the largest */
static double ref_round(double v, int mbits, int bias)
{
    if (isnan(v) || isinf(v) || 0 == v) {
        return v;
    }
    int e;
    (void) frexp(fabs(v), &e);
    int E = e - 1;
    if (E < 1 - bias) {
        E = 1 - bias; /* subnormal: a fixed quantum */
    }
    const double q = ldexp(1.0, E - mbits);
    const double r = nearbyint(v / q) * q;
    if (fabs(r) >= ldexp(1.0, bias + 1)) {
        return copysign(INFINITY, v);
    }
    return r;
}

/* a value the format holds exactly -> its bits */
static uint16_t ref_encode(double r, int mbits, int bias)
{
    const int ebits = 15 - mbits;
    const uint16_t sign = signbit(r) ? 0x8000 : 0;
    const double a = fabs(r);
    if (isnan(r)) {
        return (uint16_t) (((1u << ebits) - 1) << mbits | (1u << (mbits - 1)));
    }
    if (isinf(r)) {
        return (uint16_t) (sign | ((1u << ebits) - 1) << mbits);
    }
    if (0 == a) {
        return sign;
    }
    int e;
    (void) frexp(a, &e);
    const int E = e - 1;
    if (E < 1 - bias) {
        return (uint16_t) (sign | (uint16_t) ldexp(a, bias - 1 + mbits));
    }
    const unsigned frac = (unsigned) ldexp(ldexp(a, -E) - 1.0, mbits);
    return (uint16_t) (sign | (unsigned) (E + bias) << mbits | frac);
}

struct half_fmt {
    gpu_dtype_t dt;
    int mbits, bias;
    const char *name;
};
static const half_fmt half_f16 = { GPU_DT_F16, 10, 15, "float16" };
static const half_fmt half_bf16 = { GPU_DT_BF16, 7, 127, "bfloat16" };

static float half_to_float(const half_fmt &f, uint16_t h)
{
    return GPU_DT_F16 == f.dt ? gpu_f16_float(gpu_f16{ h }) : gpu_bf16_float(gpu_bf16{ h });
}

static uint16_t float_to_half(const half_fmt &f, float x)
{
    return GPU_DT_F16 == f.dt ? gpu_float_f16(x).bits : gpu_float_bf16(x).bits;
}

static bool half_isnan(const half_fmt &f, uint16_t h)
{
    return isnan(ref_decode(h, f.mbits, f.bias));
}

/* equal bits, or both NaN */
static bool half_same(const half_fmt &f, uint16_t a, uint16_t b)
{
    return a == b || (half_isnan(f, a) && half_isnan(f, b));
}

static void half_expect(bool ok, const char *what, const half_fmt &f, double in, uint16_t got,
                        uint16_t want)
{
    if (ok) {
        npass++;
        return;
    }
    if (nfail++ < 20) {
        printf("FAIL: %s %s of %.17g: got 0x%04x, want 0x%04x\n", f.name, what, in, got, want);
    }
}

/* every encoding widens exactly; narrowing rounds to nearest even at
 * every midpoint, one float ulp either side of it, the overflow and
 * subnormal edges, and a million random floats */
static void half_check_conversions(std::mt19937_64 &rng)
{
    const half_fmt fmts[2] = { half_f16, half_bf16 };
    for (const half_fmt &f : fmts) {
        int bad_widen = 0, bad_narrow = 0;
        for (uint32_t h = 0; h < 0x10000; ++h) {
            const double want = ref_decode((uint16_t) h, f.mbits, f.bias);
            const float got = half_to_float(f, (uint16_t) h);
            if (!(isnan(want) ? isnan(got) : ((double) got == want && signbit(got) == signbit(want)))) {
                bad_widen++;
            }
#if defined(__FLT16_MAX__)
            if (GPU_DT_F16 == f.dt) {
                _Float16 x;
                memcpy(&x, &h, 2);
                if (!(isnan(want) ? isnan((float) x) : (float) x == got)) {
                    bad_widen++;
                }
            }
#endif
        }
        half_expect(0 == bad_widen, "widening (all 65536)", f, bad_widen, 0, 0);
        std::vector<float> xs;
        for (uint32_t h = 0; h < 0x7fff; ++h) { /* positive, finite and next */
            const double lo = ref_decode((uint16_t) h, f.mbits, f.bias);
            const double hi = ref_decode((uint16_t) (h + 1), f.mbits, f.bias);
            if (isnan(lo) || isinf(lo)) {
                continue;
            }
            const double mid = isinf(hi) ? lo + (lo - ref_decode((uint16_t) (h - 1), f.mbits, f.bias)) / 2
                                         : (lo + hi) / 2;
            const float fm = (float) mid;
            xs.push_back((float) lo);
            xs.push_back(fm);
            xs.push_back(nextafterf(fm, 0));
            xs.push_back(nextafterf(fm, INFINITY));
        }
        for (int i = 0; i < 1000000; ++i) {
            uint32_t u = (uint32_t) rng();
            float x;
            memcpy(&x, &u, 4);
            xs.push_back(x);
        }
        const float specials[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX,
                                   -FLT_MAX, FLT_MIN, FLT_TRUE_MIN, 65504.0f, 65519.996f,
                                   65520.0f, 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f };
        xs.insert(xs.end(), specials, specials + sizeof(specials) / sizeof(specials[0]));
        for (float x : xs) {
            for (int sgn = 0; sgn < 2; ++sgn) {
                const float v = sgn ? -x : x;
                const uint16_t got = float_to_half(f, v);
                const uint16_t want = ref_encode(ref_round((double) v, f.mbits, f.bias), f.mbits, f.bias);
                bool ok = half_same(f, got, want);
#if defined(__FLT16_MAX__)
                if (GPU_DT_F16 == f.dt && !isnan(v)) {
                    const _Float16 c = (_Float16) v;
                    uint16_t cb;
                    memcpy(&cb, &c, 2);
                    ok = ok && cb == got;
                }
#endif
                if (!ok && bad_narrow++ < 5) {
                    printf("  %s narrowing %.9g: got 0x%04x, want 0x%04x\n", f.name, (double) v, got,
                           want);
                }
            }
        }
        half_expect(0 == bad_narrow, "narrowing (midpoints, edges, random)", f, bad_narrow, 0, 0);
    }
}

/* a random 16-bit pattern: every class (NaN, infinities, zeros,
 * subnormals) comes up */
static uint16_t half_any(std::mt19937_64 &rng)
{
    return (uint16_t) rng();
}

/* the functor for two operands against the correctly rounded result */
static void half_check_op(gpu_op_t op, gpu_dtype_t dt, std::mt19937_64 &rng)
{
    const half_fmt &f = GPU_DT_F16 == dt ? half_f16 : half_bf16;
    int bad = 0;
    for (int i = 0; i < 200000; ++i) {
        const uint16_t a = half_any(rng), b = half_any(rng);
        const double da = ref_decode(a, f.mbits, f.bias), db = ref_decode(b, f.mbits, f.bias);
        uint16_t got, want;
        bool near_ok = false;
        if (GPU_DT_F16 == dt) {
            got = gpu_dispatch_apply<gpu_f16>(op, gpu_f16{ a }, gpu_f16{ b }).bits;
        } else {
            got = gpu_dispatch_apply<gpu_bf16>(op, gpu_bf16{ a }, gpu_bf16{ b }).bits;
        }
        switch (op) {
        case GPU_OP_SUM: want = ref_encode(ref_round(da + db, f.mbits, f.bias), f.mbits, f.bias); break;
        case GPU_OP_PROD: {
            const double p = da * db;
            want = ref_encode(ref_round(p, f.mbits, f.bias), f.mbits, f.bias);
            /* bfloat16 products below fp32's normal range round twice
             * (fp32 subnormal, then bfloat16): one ulp allowed there */
            near_ok = GPU_DT_BF16 == dt && 0 != p && fabs(p) < FLT_MIN &&
                      (got - want == 1 || want - got == 1);
            break;
        }
        /* Open MPI's loops: inout = (inout OP in) ? inout : in */
        case GPU_OP_MIN: want = (da < db) ? a : b; break;
        default: want = (da > db) ? a : b; break;
        }
        if (!half_same(f, got, want) && !near_ok && bad++ < 5) {
            printf("  %s %s(0x%04x, 0x%04x): got 0x%04x, want 0x%04x\n", f.name, gpu_op_name(op), a,
                   b, got, want);
        }
    }
    half_expect(0 == bad, gpu_op_name(op), f, bad, 0, 0);
}

/* many inputs: fp32 accumulation in rank order, one rounding at the end;
 * and that this is not what folding pairwise gives (else the test could
 * not tell the two apart) */
template <class H> static void half_fold_case(const half_fmt &f, gpu_op_t op, std::mt19937_64 &rng,
                                              int *bad, int *differs)
{
    std::uniform_real_distribution<double> real(-4.0, 4.0);
    for (int n = 2; n <= 8; ++n) {
        for (int i = 0; i < 4000; ++i) {
            H x[8];
            for (int r = 0; r < n; ++r) {
                /* mostly finite values of mixed sign and magnitude; now and
                 * then a raw pattern (NaN, infinity, subnormal) */
                const double v = ldexp(real(rng), (int) (rng() % 9) - 4);
                x[r].bits = (rng() % 64) ? ref_encode(ref_round(v, f.mbits, f.bias), f.mbits, f.bias)
                                         : half_any(rng);
            }
            typedef gpu_fold<gpu_red<GPU_OP_SUM, H>> FS;
            typedef gpu_fold<gpu_red<GPU_OP_PROD, H>> FP;
            typedef gpu_fold<gpu_red<GPU_OP_MIN, H>> FMI;
            typedef gpu_fold<gpu_red<GPU_OP_MAX, H>> FMA;
            float acc = 0, want_acc = (float) ref_decode(x[0].bits, f.mbits, f.bias);
            H got, pair = x[0];
            switch (op) {
            case GPU_OP_SUM: acc = FS::load(x[0]); break;
            case GPU_OP_PROD: acc = FP::load(x[0]); break;
            case GPU_OP_MIN: acc = FMI::load(x[0]); break;
            default: acc = FMA::load(x[0]); break;
            }
            for (int r = 1; r < n; ++r) {
                const float w = (float) ref_decode(x[r].bits, f.mbits, f.bias);
                switch (op) {
                case GPU_OP_SUM: acc = FS::apply(acc, FS::load(x[r])); want_acc += w; break;
                case GPU_OP_PROD: acc = FP::apply(acc, FP::load(x[r])); want_acc *= w; break;
                case GPU_OP_MIN: acc = FMI::apply(acc, FMI::load(x[r])); want_acc = want_acc < w ? want_acc : w; break;
                default: acc = FMA::apply(acc, FMA::load(x[r])); want_acc = want_acc > w ? want_acc : w; break;
                }
                pair = gpu_dispatch_apply<H>(op, pair, x[r]);
            }
            got = FS::store(acc);
            const uint16_t want = ref_encode(ref_round((double) want_acc, f.mbits, f.bias), f.mbits, f.bias);
            if (!half_same(f, got.bits, want) && (*bad)++ < 5) {
                printf("  %s fold %s of %d: got 0x%04x, want 0x%04x\n", f.name, gpu_op_name(op), n,
                       got.bits, want);
            }
            if (!half_same(f, got.bits, pair.bits)) {
                (*differs)++;
            }
        }
    }
}

static void half_check_fold(std::mt19937_64 &rng)
{
    const gpu_op_t ops[4] = { GPU_OP_SUM, GPU_OP_PROD, GPU_OP_MIN, GPU_OP_MAX };
    for (gpu_op_t op : ops) {
        int bad = 0, d16 = 0, d8 = 0;
        half_fold_case<gpu_f16>(half_f16, op, rng, &bad, &d16);
        half_expect(0 == bad, "fold", half_f16, gpu_op_name(op)[0], 0, 0);
        bad = 0;
        half_fold_case<gpu_bf16>(half_bf16, op, rng, &bad, &d8);
        half_expect(0 == bad, "fold", half_bf16, gpu_op_name(op)[0], 0, 0);
        /* SUM and PROD round once where pairwise rounds n-1 times: they
         * must differ somewhere; MIN and MAX never round */
        const bool rounds = GPU_OP_SUM == op || GPU_OP_PROD == op;
        half_expect(rounds ? (d16 > 0 && d8 > 0) : (0 == d16 && 0 == d8),
                    "fold vs pairwise difference count", half_f16, d16 + d8, 0, 0);
    }
}

/* long double: ties, NaN, infinities, zeros, subnormals, and the x87's
 * unnormal and pseudo-denormal encodings */
static void ld_fill(unsigned char *e, std::mt19937_64 &rng)
{
    long double v;
    memset(e, 0, 16);
    switch (rng() % 12) {
    case 0: v = NAN; break;
    case 1: v = -INFINITY; break;
    case 2: v = INFINITY; break;
    case 3: v = (rng() & 1) ? 0.0L : -0.0L; break;
    case 4: v = LDBL_TRUE_MIN * (long double) (rng() % 3 + 1); break;
    case 5: v = -LDBL_MIN; break;
    case 6: { /* unnormal: exponent 1, integer bit clear */
        const uint64_t m = (rng() >> 2) | 1;
        const uint16_t se = 1;
        memcpy(e, &m, 8);
        memcpy(e + 8, &se, 2);
        return;
    }
    case 7: { /* pseudo-denormal: exponent 0, integer bit set */
        const uint64_t m = 0x8000000000000000ull | (rng() % 4);
        const uint16_t se = (rng() & 1) ? 0x8000 : 0;
        memcpy(e, &m, 8);
        memcpy(e + 8, &se, 2);
        return;
    }
    default: v = (long double) ((int) (rng() % 7) - 3) / 4.0L; break;
    }
    memcpy(e, &v, 10);
}

#endif /* TEST_HALF_H */
