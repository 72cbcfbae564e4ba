"""A word-level tokenizer built from a set of captions (issue 40 item 3's laptop part), pure numpy.

    tokenizer = WordTokenizer.from_texts(captions.captions(), length=12)
    ids = tokenizer.encode(["a small red sneaker at the top left"])    # int32 [1, 12]
    tokenizer.decode(ids[0])                                            # 'a small red sneaker at the top left'
    tokenizer.save("tokenizer.json"); WordTokenizer.load("tokenizer.json")

Words are split on white space and lower-cased. Ids: 0 padding, 1 end-of-text, 2 unknown word, then
the vocabulary in sorted order (the same captions give the same ids, whatever their order). A text
becomes its words' ids, the end-of-text token, then padding to `length`: CLIP's text tower reads the
end-of-text token (`eos_token_id=EOS_ID`), SigLIP's the last position, so both see the whole text.

A text longer than `length` - 1 words is an error naming it and the length that fits (`truncate=True`
cuts it and keeps the end-of-text token); an unknown word becomes the unknown token, or an error with
`strict=True`, which prompts use: a colour the captions never name would otherwise score as '<unk>'.
Converted models (CLIP, SigLIP) use their own tokenizers (vitjax/interop/hf_tokens.py); this one serves the
caption data made here.
"""
import dataclasses
import json

import numpy as np

RECORD = "tokenizer.json"  # the file a run that trains on captions keeps its tokenizer in
PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
SPECIAL = (PAD, EOS, UNK)
PAD_ID, EOS_ID, UNK_ID = range(3)


def words_of(text: str) -> list[str]:
    return text.lower().split()


@dataclasses.dataclass(frozen=True)
class WordTokenizer:
    words: tuple[str, ...]  # the vocabulary, ids len(SPECIAL) on
    length: int  # tokens per encoded text, end-of-text and padding included

    def __post_init__(self):
        if self.length < 2:
            raise ValueError(f"length={self.length}: a text needs at least one word and the end-of-text token")
        clashes = sorted(set(self.words) & set(SPECIAL))
        if clashes or len(set(self.words)) != len(self.words):
            raise ValueError(f"a vocabulary lists each word once and none of {SPECIAL}; got {clashes or 'repeats'}")

    @classmethod
    def from_texts(cls, texts, length: int) -> "WordTokenizer":
        return cls(tuple(sorted({word for text in texts for word in words_of(text)})), int(length))

    @property
    def vocab_size(self) -> int:
        return len(SPECIAL) + len(self.words)

    def _ids(self) -> dict:
        return {word: index for index, word in enumerate(SPECIAL + self.words)}

    def encode(self, texts, *, strict: bool = False, truncate: bool = False) -> np.ndarray:
        """int32 [len(texts), length]; see the module docstring for unknown words and long texts."""
        ids, rows = self._ids(), []
        for text in texts:
            words = words_of(text)
            unknown = [w for w in words if w not in ids or w in SPECIAL]
            if strict and unknown:
                raise ValueError(f"{text!r}: {', '.join(map(repr, unknown))} not in the caption vocabulary "
                                 f"({len(self.words)} words: {', '.join(self.words)}); use the captions' words")
            if len(words) > self.length - 1:
                if not truncate:
                    raise ValueError(f"{text!r} has {len(words)} words; this tokenizer's length {self.length} "
                                     f"holds {self.length - 1} and the end-of-text token: build it with "
                                     f"length >= {len(words) + 1}, or encode with truncate=True")
                words = words[:self.length - 1]
            row = [UNK_ID if w in SPECIAL else ids.get(w, UNK_ID) for w in words] + [EOS_ID]
            rows.append(row + [PAD_ID] * (self.length - len(row)))
        return np.asarray(rows, np.int32).reshape(len(rows), self.length)

    def decode(self, ids) -> str:
        """The words of one encoded text up to its end-of-text token (unknown ones as '<unk>')."""
        vocabulary = SPECIAL + self.words
        words = []
        for index in np.asarray(ids).tolist():
            if index == EOS_ID:
                break
            if index != PAD_ID:
                words.append(vocabulary[index])
        return " ".join(words)

    def to_json(self) -> dict:
        return {"kind": "word", "special": list(SPECIAL), "words": list(self.words), "length": self.length}

    @classmethod
    def from_json(cls, payload: dict) -> "WordTokenizer":
        if payload.get("kind") != "word" or tuple(payload.get("special", ())) != SPECIAL:
            raise ValueError(f"not a word tokenizer of this layout (special tokens {SPECIAL}): {payload!r:.200}")
        return cls(tuple(payload["words"]), int(payload["length"]))

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=1)

    @classmethod
    def load(cls, path: str) -> "WordTokenizer":
        with open(path) as f:
            return cls.from_json(json.load(f))
