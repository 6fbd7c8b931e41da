"""Every committed report's intervals over seeds lie within what their metric can take (an accuracy's in [0, 1], a
BLEU's in [0, 100]): a report built before the bounds were applied is rebuilt, not left to say 'accuracy [0.028,
1.32]'."""

from __future__ import annotations

import re
from pathlib import Path

from suite.runtime.bounds import metric_bounds

ROOT = Path(__file__).resolve().parents[1]
INTERVAL = re.compile(r"\b(\w+) (?:95 % CI |range )?\[(-?[\d.]+), (-?[\d.]+)\]")


def test_no_committed_interval_lies_outside_its_metrics_bounds():
    checked, outside = 0, []
    for page in sorted((ROOT / "results").rglob("*.md")):
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for name, low, high in INTERVAL.findall(line):
                bounds = metric_bounds(name)
                if bounds == metric_bounds("not a metric"):
                    continue  # a word before a bracket, not a metric
                checked += 1
                if float(low) < bounds[0] or float(high) > bounds[1]:
                    outside.append(f"{page.relative_to(ROOT)}:{number}: {name} [{low}, {high}]")
    assert checked > 20 and not outside, "\n".join(outside)
