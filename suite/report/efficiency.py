"""What the efficient attention variants buy: LRA Table 2's form, from speed records.

For each setting of speed points (task, model size, precision, batch), every model's training
throughput (real tokens/s) and peak training memory relative to full attention (the fused SDPA
kernel, ``model/attention=full``) at the same length, and each variant's crossover length: the
shortest measured length from which on it trains faster than SDPA at every longer length
measured. Two columns follow the issue's targets: the variant's own throughput at the longest
length over the shortest (how much it slows with length) and its memory at 16K over 4K (4x is
linear). Every figure is computed from records; nothing is typed in.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from suite.report import formatting as fmt
from suite.report.plots import family, is_speed, model_size
from suite.runtime.record import ResultRecord

BASELINE = "full"  # the fused kernel every variant is measured against
LENGTHS = (1024, 2048, 4096, 8192, 16384)  # the columns, as LRA's Table 2 (1K-4K) and the issue (to 16K)
GROWTH = (4096, 16384)  # memory growth over this span: 4x is linear in length


def variant(r: ResultRecord) -> str:
    """A row's name: the attention variant of an attention model, else the model's name (lstm)."""
    return (r.attention or BASELINE) if family(r) == "attention" else r.model


def setting(r: ResultRecord) -> tuple[str, str, str, str]:
    """What must agree for two points to be compared: task and dataset, width x depth, precision, batch."""
    batch = r.speed.get("batch_size") or (r.config.get("job") or {}).get("batch_size")
    return f"{r.task}/{r.dataset}", model_size(r), r.precision or "fp32", f"batch {batch:g}" if batch else ""


def short(length: int) -> str:
    """1024 -> '1K', 784 -> '784'."""
    return f"{length // 1024}K" if length % 1024 == 0 else str(length)


Points = dict[int, list[ResultRecord]]  # length -> records of one model at that length


def figure(points: Points, length: int, key: str) -> float | None:
    """The mean of ``key`` over the ok records at ``length`` (None when none is ok)."""
    values = [r.speed[key] for r in points.get(length, []) if r.status == "ok" and key in r.speed]
    return statistics.mean(values) if values else None


def status(points: Points, length: int) -> str:
    """Why a point has no figure: its records' statuses ('' when it was never run)."""
    return "/".join(sorted({r.status for r in points.get(length, [])}))


def faster(own: Points, full: Points, length: int) -> bool | None:
    """Trains more tokens/s than full attention at ``length``; True where full attention failed and it did not; None if
    unknown."""
    mine, theirs = figure(own, length, "train_tokens_per_s"), figure(full, length, "train_tokens_per_s")
    if mine is None:
        return None
    if theirs is None:
        return bool(
            full.get(length)
        )  # full was run and produced nothing (timeout, oom): the variant trains where it cannot
    return mine > theirs


def crossover(own: Points, full: Points) -> str:
    """The shortest measured length from which on it is faster than full attention ('≤1K': already at the shortest;
    'none ≤16K')."""
    verdicts = [(length, v) for length in sorted(set(own) | set(full)) if (v := faster(own, full, length)) is not None]
    if not verdicts:
        return ""
    start = None
    for length, is_faster in reversed(verdicts):
        if not is_faster:
            break
        start = length
    if start is None:
        return f"none ≤{short(verdicts[-1][0])}"
    return f"≤{short(start)}" if start == verdicts[0][0] else short(start)


def relative(own: Points, full: Points, length: int, key: str, show) -> str:
    """A cell: own / full at ``length`` ('1.8x'); the baseline's own value in its row; or why there is none."""
    mine = figure(own, length, key)
    if mine is None:
        return status(own, length)
    if own is full:
        return show(mine)
    theirs = figure(full, length, key)
    return f"{mine / theirs:.2f}x" if theirs else f"{show(mine)} (full: {status(full, length) or 'not run'})"


def ratio(points: Points, top: int, bottom: int, key: str) -> str:
    """A model's own figure at ``top`` over at ``bottom`` ('' unless both were measured)."""
    a, b = figure(points, top, key), figure(points, bottom, key)
    return f"{a / b:.2f}x" if a is not None and b else ""


def row_order(name: str, records: list[ResultRecord]) -> tuple[int, str]:
    """Full attention first, then the other variants by name, then models without attention (the recurrent ones)."""
    if name == BASELINE:
        return 0, name
    return (1 if any(family(r) == "attention" for r in records) else 2), name


def efficiency_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """The table: a row per model in every setting that has full attention and something beside it."""
    by_setting: dict[tuple, dict[str, Points]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        if is_speed(r) and r.seq_len:
            by_setting[setting(r)][variant(r)][r.seq_len].append(r)
    settings = [s for s, models in by_setting.items() if BASELINE in models and len(models) > 1]
    rows = []
    for key in sorted(settings):
        models = by_setting[key]
        full = models[BASELINE]
        lengths = [n for n in LENGTHS if any(n in points for points in models.values())]
        rate = lambda v: f"{fmt.rate(v)} tok/s"  # noqa: E731
        mib = lambda v: f"{v / 2**20:.3g} MiB"  # noqa: E731
        for name in sorted(models, key=lambda m: row_order(m, [r for rs in models[m].values() for r in rs])):
            own = models[name]
            row = {"setting": ", ".join(k for k in key if k), "model": name}
            row |= {f"train tok/s {short(n)}": relative(own, full, n, "train_tokens_per_s", rate) for n in lengths}
            row |= {f"peak memory {short(n)}": relative(own, full, n, "peak_mem_train_bytes", mib) for n in lengths}
            row["crossover"] = "" if own is full else crossover(own, full)
            if lengths:
                row[f"own tok/s {short(lengths[-1])}/{short(lengths[0])}"] = ratio(
                    own, lengths[-1], lengths[0], "train_tokens_per_s"
                )
            row[f"memory {short(GROWTH[1])}/{short(GROWTH[0])}"] = ratio(
                own, GROWTH[1], GROWTH[0], "peak_mem_train_bytes"
            )
            rows.append(row)
    if len(settings) == 1:
        rows = [{k: v for k, v in row.items() if k != "setting"} for row in rows]
    columns = list(dict.fromkeys(c for row in rows for c in row))  # settings may differ in their lengths
    filled = [c for c in columns if any(r.get(c) for r in rows)]
    return [{c: r.get(c, "") for c in filled} for r in rows]
