"""Translation: Multi30k reading, reversible subwords, and BLEU/chrF exactly as sacreBLEU gives them."""

import gzip
import unicodedata

import pytest
import sacrebleu
import torch
from hydra.utils import instantiate

from suite.data.datadir import DataError
from suite.data.tokenizers import decode, encode, train_bpe
from tasks.seq2seq import TextPair
from tasks.translation import bleu_chrf, build, read_pairs
from tests.conftest import compose_config, need_data


@pytest.fixture(scope="module")
def multi30k():
    return need_data("translation", "multi30k")


def test_multi30k_splits_and_directions(multi30k):
    sizes = {
        "train": 29000,
        "val": 1014,
        "test_2016_flickr": 1000,
        "test_2017_flickr": 1000,
        "test_2017_mscoco": 461,
        "test_2018_flickr": 1071,
    }
    for split, n in sizes.items():
        assert len(read_pairs(multi30k, split, "en", "de")) == n
    en_de, de_en = read_pairs(multi30k, "val", "en", "de"), read_pairs(multi30k, "val", "de", "en")
    assert en_de[0].source == de_en[0].target and en_de[0].target == de_en[0].source


def test_reversible_bpe_gives_the_text_back(multi30k):
    train = read_pairs(multi30k, "train", "en", "de")[:3000]
    tok = train_bpe([p.source for p in train] + [p.target for p in train], 2000, reversible=True)
    val = [p.target for p in read_pairs(multi30k, "val", "en", "de")]
    # So BLEU is computed on real, detokenized text (up to NFKC: a no-break space becomes a space).
    assert decode(tok, encode(tok, val)) == [unicodedata.normalize("NFKC", s) for s in val]


def test_bad_files_name_file_and_line(tmp_path):
    (tmp_path / "val.en.gz").write_bytes(gzip.compress(b"a dog\n\na cat\n"))
    (tmp_path / "val.de.gz").write_bytes(gzip.compress(b"ein Hund\neine Katze\n"))
    with pytest.raises(DataError, match=r"val\.en\.gz:2: empty"):
        read_pairs(tmp_path, "val", "en", "de")
    (tmp_path / "val.en.gz").write_bytes(gzip.compress(b"a dog\na cat\na cow\n"))
    with pytest.raises(DataError, match="3 lines.*2"):
        read_pairs(tmp_path, "val", "en", "de")


class Echo(torch.nn.Module):
    """A model of strings that 'translates' by copying the source: a fixed set of hypotheses to score."""

    def forward(self, sources: list[str]) -> list[str]:
        return list(sources)


def test_task_scores_equal_sacrebleu_called_directly(multi30k):
    cfg = compose_config("task=translation", "task.vocab_size=1000", "task.extra_test_sets=[test_2017_mscoco]")
    task = instantiate(cfg.task)
    task.setup()
    metrics = task.evaluate(Echo(), task.loaders(64, seed=0)["test"], torch.device("cpu"))
    for name, prefix in (("test_2016_flickr", ""), ("test_2017_mscoco", "test_2017_mscoco_")):
        pairs = read_pairs(multi30k, name, "en", "de")
        hyps, refs = [p.source for p in pairs], [[p.target for p in pairs]]
        assert metrics[prefix + "bleu"] == sacrebleu.corpus_bleu(hyps, refs).score
        assert metrics[prefix + "chrf"] == sacrebleu.corpus_chrf(hyps, refs).score
    assert 0 < metrics["chrf"] < 100 and "loss" not in metrics  # a model of strings has no token loss
    assert task.split_sizes() == {"train": 29000, "val": 1014, "test": 1000, "test_2017_mscoco": 461}


def test_bleu_of_the_references_is_100():
    refs = ["Ein Hund läuft.", "Zwei Männer sitzen auf einer Bank."]
    scores = bleu_chrf(refs, [TextPair("", r) for r in refs])
    assert scores["bleu"] == pytest.approx(100.0) and scores["chrf"] == pytest.approx(100.0)


def test_unknown_options_are_named():
    search = lambda *a, **k: []  # noqa: E731
    for kwargs, word in (
        (dict(direction="en-fr"), "en-fr"),
        (dict(test_set="test_2020"), "test_2020"),
        (dict(vocab="shared"), "shared"),
    ):
        task = build("translation", search, search, data_dir=None, **kwargs)
        with pytest.raises(ValueError, match=word):
            task.setup()
