"""The caption data's word tokenizer (vitjax/data/tokenizer.py): ids, round trips, unknown words,
padding and long texts, and its JSON file."""
import numpy as np
import pytest

from vitjax.data import captions
from vitjax.data.tokenizer import EOS_ID, PAD_ID, UNK_ID, WordTokenizer

TEXTS = ["a small red sneaker at the top left", "a large blue bag in the centre"]


def test_ids_are_the_sorted_vocabulary_after_the_special_tokens_and_texts_round_trip():
    tokenizer = WordTokenizer.from_texts(reversed(TEXTS), length=12)
    assert tokenizer.words == tuple(sorted(set(" ".join(TEXTS).split())))
    assert tokenizer.vocab_size == 3 + len(tokenizer.words)
    ids = tokenizer.encode(TEXTS)
    assert ids.shape == (2, 12) and ids.dtype == np.int32
    words = TEXTS[0].split()
    np.testing.assert_array_equal(ids[0], [3 + tokenizer.words.index(w) for w in words] + [EOS_ID] + [PAD_ID] * 3)
    assert [tokenizer.decode(row) for row in ids] == TEXTS
    every = captions.captions()
    full = WordTokenizer.from_texts(every, length=10)  # the longest caption: 9 words and the end token
    assert [full.decode(row) for row in full.encode(every)] == every


def test_unknown_words_become_the_unknown_token_or_an_error_naming_them():
    tokenizer = WordTokenizer.from_texts(TEXTS, length=12)
    ids = tokenizer.encode(["a purple sneaker"])[0]
    assert ids[1] == UNK_ID and tokenizer.decode(ids) == "a <unk> sneaker"
    with pytest.raises(ValueError, match="'purple' not in the caption vocabulary"):
        tokenizer.encode(["a purple sneaker"], strict=True)
    assert tokenizer.encode(["A  Small\tRED"])[0][:3].tolist() == tokenizer.encode(["a small red"])[0][:3].tolist()


def test_a_text_longer_than_the_length_is_an_error_or_cut_keeping_its_end_token():
    tokenizer = WordTokenizer.from_texts(TEXTS, length=5)
    with pytest.raises(ValueError, match="has 8 words; .* length 5 holds 4 .* length >= 9, or .*truncate=True"):
        tokenizer.encode(TEXTS[:1])
    cut = tokenizer.encode(TEXTS[:1], truncate=True)[0]
    assert cut[-1] == EOS_ID and tokenizer.decode(cut) == "a small red sneaker"
    exact = tokenizer.encode(["a small red sneaker"])[0]  # 4 words + end token: no padding left
    np.testing.assert_array_equal(exact, cut)


def test_the_json_file_round_trips_and_a_foreign_one_is_refused(tmp_path):
    tokenizer = WordTokenizer.from_texts(captions.captions(), length=12)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    loaded = WordTokenizer.load(str(tmp_path / "tokenizer.json"))
    assert loaded == tokenizer
    np.testing.assert_array_equal(loaded.encode(TEXTS), tokenizer.encode(TEXTS))
    with pytest.raises(ValueError, match="not a word tokenizer"):
        WordTokenizer.from_json({"kind": "bpe", "words": [], "length": 4})
    with pytest.raises(ValueError, match="each word once"):
        WordTokenizer(("a", "a"), 4)
