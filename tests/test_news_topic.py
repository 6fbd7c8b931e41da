"""BBC News topics: BPE tokens or UTF-8 bytes (LRA's Text task reads bytes), the same split either way."""

import pytest

from suite.data.tokenizers import BYTE_PAD, BYTE_VOCAB, byte_names, utf8_ids
from tasks.news_topic import build
from tests.conftest import need_data


def test_bytes_are_ids_one_above_the_byte_and_readable_back():
    assert utf8_ids(["Hi é"]) == [[73, 106, 33, 0xC3 + 1, 0xA9 + 1]]  # é is two UTF-8 bytes
    assert byte_names([73, 106, 33, 0xC4, BYTE_PAD]) == ["H", "i", " ", "0xc3", "[PAD]"]
    assert max(max(ids) for ids in utf8_ids(["\xff\U0001f600"])) < BYTE_VOCAB


def test_byte_level_articles_are_cut_at_seq_len_bytes_and_split_as_the_tokens_are():
    need_data("summarization", "bbc_news_summary")
    tasks = {name: build("news_topic", seq_len=1024, tokenizer=name) for name in ("bpe", "bytes")}
    for task in tasks.values():
        task.setup()
    data = tasks["bytes"].data
    lengths = [len(s) for s in data.splits["train"].sequences]
    assert max(lengths) == 1024 and min(lengths) > 100  # articles longer than 1K bytes are cut there
    assert all(int(s.max()) < BYTE_VOCAB and int(s.min()) > BYTE_PAD for s in data.splits["train"].sequences)
    assert tasks["bytes"].split_sizes() == tasks["bpe"].split_sizes()  # the split does not depend on the tokenizer
    assert data.splits["test"].labels.tolist() == tasks["bpe"].data.splits["test"].labels.tolist()
    text = "".join(data.token_names(data.splits["test"].sequences[0][:40].tolist()))
    assert text.isprintable() and len(text) >= 30  # the article's first characters, readable


def test_an_unknown_tokenizer_is_refused_before_any_data_is_read(tmp_path):
    with pytest.raises(ValueError, match=r"tokenizer 'chars'; choose one of \['bpe', 'bytes'\]"):
        build("news_topic", data_dir=str(tmp_path / "nowhere"), tokenizer="chars")
