"""The outer-operator rule on ListOps (tasks/probes/listops_outer.py): fit on train, scored on test, against runs."""

from collections import Counter

import pytest

from suite.runtime.predictions import write_predictions
from suite.runtime.record import ResultRecord
from tasks.probes.listops_outer import listops_splits, main, outer, outer_rule, outer_table, rule_accuracy, run_row

TASK = {"problem": "listops", "seq_len": 32, "n_train": 400, "n_val": 20, "n_test": 100, "split_seed": 0}
TASK |= {"max_depth": 4, "max_args": 5}


@pytest.fixture(scope="module")
def splits():
    return listops_splits(TASK)


def test_the_rule_is_each_operators_commonest_training_value(splits):
    rule = outer_rule(splits["train"])
    assert set(rule) <= {"[MAX", "[MIN", "[MED", "[SM"} | {str(d) for d in range(10)}
    for op, value in rule.items():
        values = Counter(y for s, y in splits["train"] if outer(s) == op)
        assert values[value] == max(values.values())
    assert rule["[MAX"] >= 5 and rule["[MIN"] <= 4  # the bias the rule reads: a maximum is high, a minimum low
    by_hand = sum(rule.get(outer(s)) == y for s, y in splits["test"]) / len(splits["test"])
    assert rule_accuracy(rule, splits["test"]) == by_hand


def test_a_run_that_follows_the_rule_agrees_fully_and_one_that_guesses_one_value_partly(splits):
    rule, test = outer_rule(splits["train"]), splits["test"]
    follows = [{"id": i, "label": y, "prediction": rule[outer(s)]} for i, (s, y) in enumerate(test)]
    row = run_row("r", follows, rule, test)
    assert row["agrees with the rule %"] == "100.0"
    assert row["test accuracy %"] == f"{100 * rule_accuracy(rule, test):.1f}"
    assert row["under [MAX: commonest prediction (share)"] == f"{rule['[MAX']} (100%)"
    zeros = [{**p, "prediction": 0} for p in follows]
    share = sum(rule[outer(s)] == 0 for s, _ in test) / len(test)
    assert run_row("z", zeros, rule, test)["agrees with the rule %"] == f"{100 * share:.1f}"
    with pytest.raises(ValueError, match="not of the regenerated test split"):
        run_row("w", [{**p, "label": (p["label"] + 1) % 10} for p in follows], rule, test)


def write_run(path, task, predictions):
    ResultRecord(status="ok", task="long_range", dataset="listops", model="lstm", seed=0, config={"task": task}).write(
        path
    )
    write_predictions(predictions, path)


def test_the_table_regenerates_the_runs_splits_and_refuses_runs_of_other_settings(tmp_path, splits, capsys):
    test = splits["test"]
    write_run(tmp_path / "a", TASK, [{"id": i, "label": y, "prediction": 0} for i, (_, y) in enumerate(test)])
    rows = outer_table([tmp_path / "a"])
    assert [r["run"] for r in rows] == ["outer-operator rule (fit on train)", "a"]
    assert main([str(tmp_path / "a"), "--out", str(tmp_path / "t.md")]) == 0
    assert "| outer-operator rule (fit on train) |" in (tmp_path / "t.md").read_text()
    write_run(tmp_path / "b", TASK | {"split_seed": 1}, [])
    with pytest.raises(ValueError, match="other ListOps settings"):
        outer_table([tmp_path / "a", tmp_path / "b"])
    write_run(tmp_path / "c", TASK | {"problem": "recall"}, [])
    with pytest.raises(ValueError, match="not a ListOps run"):
        outer_table([tmp_path / "c"])
