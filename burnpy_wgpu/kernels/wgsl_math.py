"""Accurate f32 special functions for WGSL, with their dependencies.

GPU built-ins are only required to be accurate to a few ulp in absolute terms, and software
adapters implement ``log``, ``asin``, ``atan``, ``tanh``, ``asinh``... with relative errors up
to 1e-2 near zero. These versions reduce the argument and use short series, keeping the
relative error within a few ulp over the whole domain. ``exp``, ``sin``, ``cos``, ``tan`` and
``sqrt`` built-ins are accurate and are used directly.
"""

from __future__ import annotations

import re

_LN2_HI = "0.693145751953125"
_LN2_LO = "1.428606820309417e-6"

# name -> (WGSL source, names it calls)
_FUNCS: dict[str, tuple[str, tuple[str, ...]]] = {
    "log_acc": (f"""
fn log_acc(x: f32) -> f32 {{
    if (is_nan(x) || x < 0.0) {{ return nan_f32(); }}
    if (x == 0.0) {{ return -inf_f32(); }}
    if (is_inf(x)) {{ return x; }}
    let fe = frexp(x);
    var m = fe.fract;
    var e = f32(fe.exp);
    if (m < 0.70710678) {{ m = m * 2.0; e = e - 1.0; }}
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let series = 1.0 + s2 * (0.33333333 + s2 * (0.2 + s2 * (0.14285714 + s2 * (0.11111111
        + s2 * 0.09090909))));
    return e * {_LN2_HI} + (2.0 * s * series + e * {_LN2_LO});
}}""", ()),
    "log1p_acc": ("""
fn log1p_acc(x: f32) -> f32 {
    if (abs(x) < 0.25) {
        let s = x / (2.0 + x);
        let s2 = s * s;
        return 2.0 * s * (1.0 + s2 * (0.33333333 + s2 * (0.2 + s2 * (0.14285714
            + s2 * 0.11111111))));
    }
    return log_acc(1.0 + x);
}""", ("log_acc",)),
    "expm1_acc": ("""
fn expm1_acc(x: f32) -> f32 {
    if (abs(x) < 0.5) {
        return x * (1.0 + x * (0.5 + x * (0.16666667 + x * (0.041666668 + x * (0.008333334
            + x * (0.0013888889 + x * (0.0001984127 + x * (2.4801588e-5
            + x * 2.7557319e-6))))))));
    }
    return exp(x) - 1.0;
}""", ()),
    "atan_acc": ("""
fn atan_unit(t: f32) -> f32 {
    let t2 = t * t;
    return t * (1.0 + t2 * (-0.33333333 + t2 * (0.2 + t2 * (-0.14285714 + t2 * (0.11111111
        + t2 * (-0.09090909 + t2 * (0.07692308 + t2 * (-0.06666667 + t2 * 0.05882353))))))));
}
fn atan_acc(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    var a = abs(x);
    var base = 0.0;
    var flip = false;
    if (a > 1.0) { a = 1.0 / a; flip = true; }
    if (a > 0.41421356) { base = 0.78539816; a = (a - 1.0) / (a + 1.0); }
    var r = base + atan_unit(a);
    if (flip) { r = 1.5707964 - r; }
    return select(r, -r, x < 0.0);
}""", ()),
    "atan2_acc": ("""
fn atan2_acc(y: f32, x: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) { return nan_f32(); }
    let ay = abs(y);
    let ax = abs(x);
    let x_neg = (bitcast<u32>(x) & 0x80000000u) != 0u;
    var r: f32;
    if (ay == 0.0) {
        r = select(0.0, 3.1415927, x_neg);
    } else if (is_inf(ax) && is_inf(ay)) {
        r = select(0.78539816, 2.3561945, x_neg);
    } else {
        if (ay > ax) { r = 1.5707964 - atan_acc(ax / ay); } else { r = atan_acc(ay / ax); }
        if (x_neg) { r = 3.1415927 - r; }
    }
    return select(r, -r, (bitcast<u32>(y) & 0x80000000u) != 0u);
}""", ("atan_acc",)),
    "asin_acc": ("""
fn asin_acc(x: f32) -> f32 {
    if (abs(x) > 1.0) { return nan_f32(); }
    return atan2_acc(x, sqrt((1.0 - x) * (1.0 + x)));
}""", ("atan2_acc",)),
    "acos_acc": ("""
fn acos_acc(x: f32) -> f32 {
    if (abs(x) > 1.0) { return nan_f32(); }
    return atan2_acc(sqrt((1.0 - x) * (1.0 + x)), x);
}""", ("atan2_acc",)),
    "sinh_acc": ("""
fn sinh_acc(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a > 80.0) { r = exp(a - 0.69314718); } else {
        let e = expm1_acc(a);
        r = 0.5 * (e + e / (e + 1.0));
    }
    return select(r, -r, x < 0.0);
}""", ("expm1_acc",)),
    "cosh_acc": ("""
fn cosh_acc(x: f32) -> f32 {
    let a = abs(x);
    if (a > 80.0) { return exp(a - 0.69314718); }
    let e = exp(a);
    return 0.5 * (e + 1.0 / e);
}""", ()),
    "tanh_acc": ("""
fn tanh_acc(x: f32) -> f32 {
    let a = abs(x);
    var r = 1.0;
    if (a < 10.0) {
        let e = expm1_acc(2.0 * a);
        r = e / (e + 2.0);
    }
    if (is_nan(x)) { return x; }
    return select(r, -r, x < 0.0);
}""", ("expm1_acc",)),
    "asinh_acc": ("""
fn asinh_acc(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a > 1.0e4) { r = log_acc(a) + 0.69314718; } else {
        r = log1p_acc(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    }
    return select(r, -r, x < 0.0);
}""", ("log_acc", "log1p_acc")),
    "acosh_acc": ("""
fn acosh_acc(x: f32) -> f32 {
    if (x < 1.0) { return nan_f32(); }
    if (x > 1.0e4) { return log_acc(x) + 0.69314718; }
    let t = x - 1.0;
    return log1p_acc(t + sqrt(2.0 * t + t * t));
}""", ("log_acc", "log1p_acc")),
    "atanh_acc": ("""
fn atanh_acc(x: f32) -> f32 {
    let a = abs(x);
    let r = 0.5 * log1p_acc(2.0 * a / (1.0 - a));
    return select(r, -r, x < 0.0);
}""", ("log1p_acc",)),
    # erfc for z >= 0 from the Chebyshev-fitted form t * exp(-z^2 + P(t)), t = 1 / (1 + z / 2)
    # (fractional error below 1.2e-7; Press et al., Numerical Recipes, section 6.2).
    "erf_acc": ("""
fn erfc_pos(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277))))))));
    return t * exp(p - z * z);
}
fn erf_small(x: f32) -> f32 {
    let x2 = x * x;
    return 1.1283792 * x * (1.0 + x2 * (-0.33333333 + x2 * (0.1 + x2 * (-0.023809524
        + x2 * (0.0046296296 + x2 * (-0.00075757576 + x2 * (0.00010683761
        + x2 * -1.3227513e-5)))))));
}
fn erf_acc(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (abs(x) < 0.5) { return erf_small(x); }
    let r = 1.0 - erfc_pos(abs(x));
    return select(r, -r, x < 0.0);
}
fn erfc_acc(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (abs(x) < 0.5) { return 1.0 - erf_small(x); }
    if (x > 0.0) { return erfc_pos(x); }
    return 2.0 - erfc_pos(-x);
}""", ()),
    "sigmoid_acc": ("""
fn sigmoid_acc(x: f32) -> f32 {
    let e = exp(-abs(x));
    let r = 1.0 / (1.0 + e);
    return select(e * r, r, x >= 0.0);
}""", ()),
    "gelu_grad": ("""
fn gelu_grad(x: f32) -> f32 {
    return 0.5 * erfc_acc(x * -0.70710678) + x * exp(-0.5 * x * x) * 0.39894228;
}""", ("erf_acc",)),
    "gelu_tanh_grad": ("""
fn gelu_tanh_grad(x: f32) -> f32 {
    let u2 = 1.5957691 * (x + 0.044715 * x * x * x);
    let du2 = 1.5957691 * (1.0 + 0.134145 * x * x);
    let s = sigmoid_acc(u2);
    return s + x * s * sigmoid_acc(-u2) * du2;
}""", ("sigmoid_acc",)),
    "softplus_acc": ("""
fn softplus_acc(x: f32) -> f32 {
    return max(x, 0.0) + log1p_acc(exp(-abs(x)));
}""", ("log1p_acc",)),
    "pow_acc": ("""
fn pow_acc(x: f32, y: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) {
        if (y == 0.0 || x == 1.0) { return 1.0; }
        return nan_f32();
    }
    if (y == 0.0) { return 1.0; }
    if (y == 1.0) { return x; }
    if (y == 2.0) { return x * x; }
    if (y == 0.5 && !(x == 0.0 && (bitcast<u32>(x) & 0x80000000u) != 0u) && !is_inf(x)) {
        return sqrt(x);
    }
    let ax = abs(x);
    let y_int = floor(y) == y;
    let y_odd = y_int && abs(y) < 16777216.0 && (i32(abs(y)) & 1) == 1;
    if (x < 0.0 && !y_int && !is_inf(x)) { return nan_f32(); }
    var r: f32;
    if (ax == 0.0) {
        r = select(0.0, inf_f32(), y < 0.0);
    } else if (is_inf(ax)) {
        r = select(inf_f32(), 0.0, y < 0.0);
    } else if (is_inf(y)) {
        if (ax == 1.0) { return 1.0; }
        r = select(0.0, inf_f32(), (ax > 1.0) == (y > 0.0));
    } else {
        r = exp2(y * log2(ax));
        if (y_int && abs(y) <= 64.0) {
            var acc = 1.0;
            var base = ax;
            var k = u32(abs(y));
            loop {
                if (k == 0u) { break; }
                if ((k & 1u) == 1u) { acc = acc * base; }
                base = base * base;
                k = k >> 1u;
            }
            r = select(acc, 1.0 / acc, y < 0.0);
        }
    }
    let negative = (bitcast<u32>(x) & 0x80000000u) != 0u;
    return select(r, -r, negative && y_odd);
}""", ()),
    "fmod_py": ("""
fn fmod_py(a: f32, b: f32) -> f32 {
    var r = a - b * trunc(a / b);
    if (abs(r) >= abs(b)) { r = r - b * trunc(r / b); }
    if (r != 0.0 && ((r < 0.0) != (b < 0.0))) { r = r + b; }
    if (r == 0.0) { r = select(0.0, -0.0, b < 0.0); }
    if (is_inf(b) && !is_inf(a)) {
        if (a == 0.0 || (a < 0.0) == (b < 0.0)) { return a; }
        return b;
    }
    return r;
}""", ()),
    # Remainders are written with division: GLSL (the OpenGL adapters) leaves ``%`` undefined
    # for negative operands.
    "floordiv_i32": ("""
fn floordiv_i32(a: i32, b: i32) -> i32 {
    let q = a / b;
    if ((a - q * b != 0) && ((a < 0) != (b < 0))) { return q - 1; }
    return q;
}""", ()),
    "mod_i32": ("""
fn mod_i32(a: i32, b: i32) -> i32 {
    let r = a - (a / b) * b;
    if (r != 0 && ((r < 0) != (b < 0))) { return r + b; }
    return r;
}""", ()),
    "shl_i32": ("""
fn shl_i32(a: i32, b: i32) -> i32 {
    if (b < 0 || b >= 32) { return 0; }
    return a << u32(b);
}""", ()),
    "shr_i32": ("""
fn shr_i32(a: i32, b: i32) -> i32 {
    if (b < 0 || b >= 32) { return select(0, -1, a < 0); }
    return a >> u32(b);
}""", ()),
    "shl_u32": ("""
fn shl_u32(a: u32, b: u32) -> u32 {
    if (b >= 32u) { return 0u; }
    return a << b;
}""", ()),
    "shr_u32": ("""
fn shr_u32(a: u32, b: u32) -> u32 {
    if (b >= 32u) { return 0u; }
    return a >> b;
}""", ()),
    "powi_i32": ("""
fn powi_i32(x: i32, e: u32) -> i32 {
    var acc = 1;
    var base = x;
    var k = e;
    loop {
        if (k == 0u) { break; }
        if ((k & 1u) == 1u) { acc = acc * base; }
        base = base * base;
        k = k >> 1u;
    }
    return acc;
}""", ()),
    "powi_u32": ("""
fn powi_u32(x: u32, e: u32) -> u32 {
    var acc = 1u;
    var base = x;
    var k = e;
    loop {
        if (k == 0u) { break; }
        if ((k & 1u) == 1u) { acc = acc * base; }
        base = base * base;
        k = k >> 1u;
    }
    return acc;
}""", ()),
}


def calls(expression: str) -> tuple[str, ...]:
    """The functions of this library that WGSL ``expression`` calls, sorted."""
    return tuple(sorted(set(re.findall(r"\b(\w+)\(", expression)) & _FUNCS.keys()))


def library(names: tuple[str, ...]) -> str:
    """The WGSL source of ``names`` and everything they call, dependencies first."""
    done: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        for dep in _FUNCS[name][1]:
            visit(dep)
        done.append(name)

    for name in names:
        visit(name)
    return "".join(_FUNCS[n][0] for n in done)
