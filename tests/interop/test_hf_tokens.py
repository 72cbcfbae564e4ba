"""vitjax/interop/hf_tokens.py: a converted CLIP or SigLIP fed by the user's own transformers tokenizer, loaded
from local files (a word-level tokenizer saved here; nothing downloaded), embeds prompts as transformers
does and classifies zero-shot alike; wrong tokenizers and over-long texts are refused by name."""
import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("torch")

from tests.interop.hf_reference import (VOCAB, assert_same, converted_from_transformers, hf_outputs,  # noqa: E402
                                        tiny_config, vitjax_outputs)
from vitjax.evaluate import zero_shot  # noqa: E402
from vitjax.interop import hf_dual_encoder, hf_tokens  # noqa: E402

WORDS = ["a", "photo", "of", "cat", "dog", "red", "small", "car", "the", "big"]
PROMPTS = ["a photo of a cat", "a photo of a dog", "a small red car", "the big dog"]


def _tokenizer(directory, eos_id=VOCAB - 1):
    """A word-level tokenizer of WORDS (ids 2-11), <unk> 0, <pad> 1, <bos> VOCAB - 2 and <eos> `eos_id`, each
    text framed as <bos> words <eos>: saved to `directory` and loaded back as a user would load theirs."""
    vocab = {"<unk>": 0, "<pad>": 1, **{w: i + 2 for i, w in enumerate(WORDS)}, "<bos>": VOCAB - 2, "<eos>": eos_id}
    model = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    model.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    model.post_processor = tokenizers.processors.TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", VOCAB - 2), ("<eos>", eos_id)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=model, bos_token="<bos>", eos_token="<eos>",
                                                pad_token="<pad>", unk_token="<unk>")
    fast.save_pretrained(directory)
    return transformers.AutoTokenizer.from_pretrained(directory, local_files_only=True)


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_the_users_tokenizer_gives_the_prompts_transformers_embeddings_and_zero_shot_classes(kind, tmp_path):
    hf_model, model, params = converted_from_transformers(tiny_config(kind))
    tokens = hf_tokens.encode(_tokenizer(tmp_path), PROMPTS, model)
    assert tokens.dtype == np.int32 and tokens.shape == (len(PROMPTS), model.text.max_length)
    assert list(tokens[0, :7]) == [VOCAB - 2, 2, 3, 4, 2, 5, VOCAB - 1] and set(tokens[0, 7:]) == {1}  # padded
    images = np.random.RandomState(1).standard_normal((3, 32, 32, 3)).astype(np.float32)
    ours, theirs = vitjax_outputs(model, params, images, tokens), hf_outputs(hf_model, images, tokens)
    assert_same(ours, theirs)
    classifier = zero_shot.class_embeddings(ours["text_embeds"], num_templates=1)
    predicted = np.asarray(zero_shot.predict(ours["image_embeds"], classifier))
    assert list(predicted) == list(np.argmax(theirs["logits_per_image"], axis=1))


def test_a_text_too_long_a_foreign_end_of_text_and_ids_past_the_vocabulary_are_refused(tmp_path):
    clip = hf_dual_encoder.model_from_config(tiny_config("clip"))
    tokenizer = _tokenizer(tmp_path / "ours")
    with pytest.raises(ValueError, match=r"'a a a a a a a a a a a a a a a' is 17 tokens; .* takes 16: shorten it"):
        hf_tokens.encode(tokenizer, ["a photo", " ".join(["a"] * 15)], clip)
    with pytest.raises(ValueError, match=r"'a photo' holds no end-of-text id 99, .* tokenizer's end-of-text id is 97"):
        hf_tokens.encode(_tokenizer(tmp_path / "other", eos_id=VOCAB - 3), ["a photo"], clip)
    config = tiny_config("siglip")
    config.text_config.vocab_size = 50
    small = hf_dual_encoder.model_from_config(config)
    with pytest.raises(ValueError, match=r"token ids \[98, 99\] outside the model's vocabulary of 50"):
        hf_tokens.encode(tokenizer, "a photo", small)
