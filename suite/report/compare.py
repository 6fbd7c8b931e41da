"""Two runs of one benchmark side by side: do their figures reproduce?

    python -m suite.compare runs/bench-quick /tmp/clone/runs/bench-quick

Pairs the records of two benchmark directories by what each run is (task, dataset, model and attention core, seed,
length, job), not by folder name, and names the settings in which a pair's configurations differ; then prints, for
every pair, whether the test metrics are identical (they should be: seeded, fixed steps; both runs' figures are
shown where they are not) and the ratio of each throughput (B over A). Exits 1 when a metric, a pair's status or
its settings differ; a pair whose precision or CPU kind differs (``machine``) is never called the same, and its
throughput ratio is labelled as such and left out of the range;
throughput is reported, never judged: speed varies with the machine, and a benchmark prints it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from suite.runtime.differences import computed_differences
from suite.runtime.record import RESULT_FILE, ResultRecord, read_result

THROUGHPUT = ("train_tokens_per_s", "infer_tokens_per_s")


Pairs = list[tuple[str, ResultRecord, ResultRecord | None]]


def identity(r: ResultRecord) -> tuple:
    """What a run is, whatever its folder is called: task, dataset, model and core, seed, length, job."""
    return (r.task, r.dataset, r.model, r.attention or "", r.seed, r.seq_len, r.job)


def config_gaps(a: ResultRecord, b: ResultRecord) -> list[str]:
    """The settings in which two runs' configurations differ ('trainer.max_steps: 30 -> 300'), those that change
    nothing computed left out."""
    return computed_differences(a.config, b.config)


def records(root: Path) -> dict[str, ResultRecord]:
    """Relative run directory -> record, for every record under ``root``."""
    return {str(p.parent.relative_to(root)): read_result(p) for p in sorted(root.rglob(RESULT_FILE))}


def paired(a: Path, b: Path) -> Pairs:
    """(A's run directory, record under a, its partner under b or None) for every record under a.

    Runs pair by what they are (``identity``), not by folder name (a sweep's job number or a renamed sweep changes
    the name, not the run): among B's runs of the same identity, the one in the same relative folder, else the one
    whose configuration differs least. Each B run pairs once.
    """
    left, right = records(a), records(b)
    unused = dict(right)
    out: Pairs = []
    for rel, ra in left.items():
        same = [k for k, rb in unused.items() if identity(rb) == identity(ra)]
        if not same:
            out.append((rel, ra, None))
            continue
        best = rel if rel in same else min(same, key=lambda k: (len(config_gaps(ra, unused[k])), k))
        out.append((rel if best == rel else f"{rel} ~ {best}", ra, unused.pop(best)))
    return out


def cpu_kind(r: ResultRecord) -> str:
    """The instruction set torch used and the CPU's bf16 unit, as in the record ('AVX2, bf16 unit None')."""
    n = r.numerics or {}
    return f"{n.get('cpu_capability') or '?'}, bf16 unit {n.get('cpu_bf16_unit')}"


def machine(r: ResultRecord) -> str:
    """The CPU kind (or GPU) a record ran on: its name and ``cpu_kind``; the name alone does not tell
    two EPYCs apart (one with AVX-512 BF16, one with AVX2 only). Threads are a setting, not the machine."""
    name = r.device.split(" x")[0]
    return f"{name} ({cpu_kind(r)})" if name.startswith("cpu") else name


def setting_differences(a: ResultRecord, b: ResultRecord) -> list[str]:
    """What makes two records of one run incomparable as a reproduction: another precision or another machine."""
    out = []
    if (a.precision or "fp32") != (b.precision or "fp32"):
        out.append(f"precision A {a.precision or 'fp32'} / B {b.precision or 'fp32'}")
    if machine(a) != machine(b):
        out.append(f"CPU A {machine(a)} / B {machine(b)}")
    return out


def test_metrics(r: ResultRecord) -> dict[str, float]:
    return {k: v for k, v in r.metrics.items() if not k.startswith("val_")}


def figures(r: ResultRecord) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in sorted(test_metrics(r).items()) if k != "loss")


def compare(pairs: Pairs) -> tuple[list[str], int]:
    """Lines to print and the number of pairs whose metrics or status differ."""
    lines, mismatches = [], 0
    for rel, ra, rb in pairs:
        if rb is None:
            lines.append(f"{rel}: missing in the second run")
            mismatches += 1
            continue
        same_status = ra.status == rb.status
        same_metrics = test_metrics(ra) == test_metrics(rb)
        gaps = config_gaps(ra, rb)
        differs = setting_differences(ra, rb) + ([f"settings differ: {'; '.join(gaps[:4])}"] if gaps else [])
        ratios = [
            f"{key.split('_')[0]} {rb.speed[key] / ra.speed[key]:.2f}x"
            for key in THROUGHPUT
            if ra.speed.get(key) and rb.speed.get(key)
        ]
        loads = [r.speed.get("others_cpu_share") for r in (ra, rb)]
        # a ratio far from 1 is explained first by the load each run was timed under
        load = f"; others' CPU share A {loads[0]:.2f} / B {loads[1]:.2f}" if None not in loads else ""
        verdict = "same" if same_status and same_metrics and not differs else "DIFFERENT"
        mismatches += verdict != "same"
        shown = figures(ra) if same_metrics else f"A {figures(ra)} / B {figures(rb)}"
        speed = f"throughput B/A ({', '.join(differs)}: not a reproduction)" if differs else "throughput B/A"
        lines.append(
            f"{rel}: {ra.status}/{rb.status}, metrics {verdict}"
            + (f" ({shown})" if shown else "")
            + (f"; {' and '.join(differs)}" if differs and not ratios else "")
            + (f"; {speed}: {', '.join(ratios)}" if ratios else "")
            + load
        )
    return lines, mismatches


def ratio_range(pairs: Pairs, key: str = "train_tokens_per_s") -> tuple[float, float, list[str]] | None:
    """Smallest and largest B/A ratio of ``key`` over the pairs of one precision and machine, and the pairs beyond 25
    %."""
    ratios = {
        rel: rb.speed[key] / ra.speed[key]
        for rel, ra, rb in pairs
        if rb is not None and ra.speed.get(key) and rb.speed.get(key) and not setting_differences(ra, rb)
    }
    if not ratios:
        return None
    far = [f"{rel} {r:.2f}x" for rel, r in ratios.items() if not 0.8 <= r <= 1.25]
    return min(ratios.values()), max(ratios.values()), far


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="a benchmark directory (e.g. runs/bench-quick)")
    parser.add_argument("b", type=Path, help="the same benchmark run again")
    args = parser.parse_args(argv)
    pairs = paired(args.a, args.b)  # every record read once
    lines, mismatches = compare(pairs)
    print("\n".join(lines))
    print(
        f"{len(lines) - mismatches} of {len(lines)} runs give identical test metrics and status in the "
        "same precision on the same CPU kind"
    )
    if other := sorted({d for _, ra, rb in pairs if rb is not None for d in setting_differences(ra, rb)}):
        print(
            "not comparable as a reproduction (precision or CPU differ), their speed left out of the range below: "
            + "; ".join(other)
        )
    if spread := ratio_range(pairs):
        low, high, far = spread
        print(f"training throughput B/A: {low:.2f}x to {high:.2f}x; beyond 25 %: {', '.join(far) or 'none'}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
