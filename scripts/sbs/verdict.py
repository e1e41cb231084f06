#!/usr/bin/python3
"""Paired comparison of pfl with a reference implementation: interval and verdict.

Every side-by-side summary script prints its rows through `compare`, so that a row's
verdict is computed from its numbers, never typed by hand. For paired differences
d_1 ... d_n (pfl − reference, in points; pairs share a partition and, where the reference
fixes its own torch seed, vary that seed with it):

  mean d̄, sample standard deviation s, standard error se = s / √n, and the 95 % interval
  d̄ ± t · se, with t the 0.975 quantile of Student's t with n − 1 degrees of freedom.

Verdicts, with a margin of ±1.5 points (optionally around an offset that a documented
difference explains):
  agrees        the interval lies inside offset ± margin;
  differs       the interval lies entirely outside ±margin around the offset;
  inconclusive  neither; `settle` says roughly how many pairs would decide it if the mean
                and the spread stayed (the half-width shrinks as 1/√n).
Fewer than 5 pairs is always reported as inconclusive: two to four pairs give intervals
too wide, and too unstable, to call agreement.

  python3 scripts/sbs/verdict.py --self-test   checks the arithmetic against known values
"""
import math

MARGIN = 1.5  # points
MIN_PAIRS = 5

# 0.975 quantiles of Student's t by degrees of freedom (standard tables, 4 decimals).
_T975 = {1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 5: 2.5706, 6: 2.4469, 7: 2.3646,
         8: 2.3060, 9: 2.2622, 10: 2.2281, 11: 2.2010, 12: 2.1788, 13: 2.1604, 14: 2.1448,
         15: 2.1314, 16: 2.1199, 17: 2.1098, 18: 2.1009, 19: 2.0930, 20: 2.0860, 21: 2.0796,
         22: 2.0739, 23: 2.0687, 24: 2.0639, 25: 2.0595, 26: 2.0555, 27: 2.0518, 28: 2.0484,
         29: 2.0452, 30: 2.0423, 40: 2.0211, 60: 2.0003, 120: 1.9799}


def t975(df):
    """The 0.975 quantile of Student's t with df degrees of freedom (df >= 1): the table's
    value, or for df between its rows the next smaller df's (a slightly wider interval)."""
    if df < 1:
        raise ValueError("t975: need at least one degree of freedom")
    if df in _T975:
        return _T975[df]
    if df > 120:
        return 1.9600
    return _T975[max(k for k in _T975 if k < df)]


def compare(diffs, margin=MARGIN, offset=0.0):
    """The paired comparison of differences `diffs` (points): a dict with n, mean, sd, se,
    lo, hi (the 95 % interval), verdict and, when inconclusive, settle (pairs that would
    decide it if the mean and spread stayed; None when no number of pairs would)."""
    d = [float(x) for x in diffs]
    n = len(d)
    out = {"n": n, "mean": None, "sd": None, "se": None, "lo": None, "hi": None,
           "verdict": "inconclusive", "settle": None}
    if n == 0:
        return out
    mean = sum(d) / n
    out["mean"] = mean
    if n < 2:
        return out
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    se = sd / math.sqrt(n)
    hw = t975(n - 1) * se
    lo, hi = mean - hw, mean + hw
    out.update(sd=sd, se=se, lo=lo, hi=hi)
    inside = offset - margin <= lo and hi <= offset + margin
    outside = lo > offset + margin or hi < offset - margin
    if n >= MIN_PAIRS and inside:
        out["verdict"] = "agrees"
    elif n >= MIN_PAIRS and outside:
        out["verdict"] = "differs"
    else:
        # the half-width that would decide it: inside the band, or clear of it
        room = margin - abs(mean - offset)
        need = room if room > 0 else -room
        if need > 0 and hw > 0:
            out["settle"] = max(MIN_PAIRS, math.ceil(n * (hw / need) ** 2))
        elif hw == 0:
            out["settle"] = MIN_PAIRS
    return out


def fmt(c):
    """A comparison as table cells: n | mean (se) | 95 % interval | verdict."""
    if c["n"] == 0 or c["mean"] is None:
        return f"{c['n']} | — | — | no pairs"
    if c["se"] is None:
        return f"{c['n']} | {c['mean']:+.2f} | — | inconclusive (one pair)"
    v = c["verdict"]
    if v == "inconclusive":
        v += f" (about {c['settle']} pairs would settle it)" if c["settle"] else " (no number of pairs settles it at this mean)"
    return f"{c['n']} | {c['mean']:+.2f} ({c['se']:.2f}) | [{c['lo']:+.2f}, {c['hi']:+.2f}] | {v}"


HEADER = "| n | pfl − reference (s.e.) | 95 % interval | verdict |"


def _self_test():
    assert abs(t975(4) - 2.7764) < 1e-9 and t975(35) == _T975[30] and t975(500) == 1.96
    c = compare([0.1, -0.2, 0.3, 0.0, -0.1])  # mean 0.02, sd 0.192, se 0.086, hw 0.238
    assert c["verdict"] == "agrees" and abs(c["mean"] - 0.02) < 1e-12, c
    assert abs(c["sd"] - math.sqrt(0.148 / 4)) < 1e-12
    c = compare([5.0, 6.0, 5.5, 4.5, 6.5])
    assert c["verdict"] == "differs" and c["lo"] > 1.5, c
    c = compare([3.0, -3.0, 2.0, -2.0, 0.0])
    assert c["verdict"] == "inconclusive" and c["settle"] > 5, c
    c = compare([0.1, 0.2])  # tight but only two pairs
    assert c["verdict"] == "inconclusive", c
    c = compare([2.1, 1.9, 2.0, 2.2, 1.8], offset=2.0)  # inside ±1.5 around an explained offset
    assert c["verdict"] == "agrees", c
    print("verdict.py: self-test passed")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--self-test"]:
        _self_test()
    else:
        print(__doc__)
