"""Token ids for a converted CLIP or SigLIP (vitjax/interop/hf_dual_encoder.py) from the user's own
Hugging Face tokenizer, read from the files that came with the weights.

    tokenizer = transformers.AutoTokenizer.from_pretrained("/path/to/the/checkpoint")   # local files only
    tokens = hf_tokens.encode(tokenizer, ["a photo of a cat", "a photo of a dog"], model)  # int32 [2, L]
    texts = model.apply(variables, tokens, method="embed_texts")                          # [2, D], unit rows

vitjax ships no BPE or SentencePiece vocabulary and downloads nothing: a converted model is only as
right as the tokenizer it was trained with, so the tokenizer is the user's, passed in (any object
called like transformers' tokenizers: `tokenizer(texts, padding=..., max_length=..., truncation=False)`
returning `input_ids`). The laptop caption data uses vitjax/data/tokenizer.py instead.

Every text is padded to the text tower's full length L (`max_length`), as both references were trained:
SigLIP pools the last position, so its padding must reach it; CLIP pools its end-of-text token, and
under causal attention the padding after it changes nothing. Refused before anything compiles, each
naming the text: a text longer than L tokens (nothing is cut silently), ids outside the model's
vocabulary, and for CLIP a text without the model's end-of-text id (tokenizer and weights disagree,
and pooling would read another position).
"""
import numpy as np


def encode(tokenizer, texts, model) -> np.ndarray:
    """int32 [len(texts), L] token ids of `texts` for `model`'s text tower (a DualEncoder), padded to L."""
    tower = model.text
    texts = [texts] if isinstance(texts, str) else list(texts)
    if not texts:
        raise ValueError("no texts to encode")
    ids = tokenizer(texts, padding="max_length", max_length=tower.max_length, truncation=False)["input_ids"]
    rows = [np.asarray(row) for row in ids]
    for text, row in zip(texts, rows):
        _check_row(text, row, tower, getattr(tokenizer, "eos_token_id", None))
    return np.stack(rows).astype(np.int32)


def _check_row(text: str, row: np.ndarray, tower, tokenizer_eos) -> None:
    if len(row) > tower.max_length:
        raise ValueError(f"{text!r} is {len(row)} tokens; the model's text tower takes {tower.max_length}: "
                         f"shorten it (nothing is cut silently)")
    if len(row) < tower.max_length:
        raise ValueError(f"the tokenizer padded {text!r} to {len(row)} tokens, not {tower.max_length}: give it "
                         f"a padding token (tokenizer.pad_token = ...)")
    outside = row[(row < 0) | (row >= tower.vocab_size)]
    if outside.size:
        raise ValueError(f"{text!r} has token ids {sorted(set(outside.tolist()))[:5]} outside the model's "
                         f"vocabulary of {tower.vocab_size}: this tokenizer is not the one its weights were "
                         f"trained with")
    if tower.pool == "eos" and tower.eos_token_id not in row:
        raise ValueError(f"{text!r} holds no end-of-text id {tower.eos_token_id}, where the model pools: the "
                         f"tokenizer's end-of-text id is {tokenizer_eos}, so it is not the one these weights "
                         f"were trained with")
