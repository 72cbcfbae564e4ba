"""Zero-shot classification by a dual encoder (CLIP, Radford et al. 2021, Section 3.1.4): each class is
the mean of the text embeddings of several prompts, one per template, and an image takes the class whose
embedding is most similar.

    texts = prompts(classes, templates)       # classes: [{'colour': 'red', 'item': 'sneaker'}, ...]
    classifier = class_embeddings(embed(tokenizer.encode(texts, strict=True)), len(templates))   # [C, D]
    predicted = predict(image_embeds, classifier)                                                 # [N]

Templates name a class's fields in braces ("a small {colour} {item}"). Each prompt's embedding is
normalised, the mean over a class's templates is normalised again (CLIP's prompt ensembling), so every
template weighs the same and the classifier rows are unit vectors, compared with the unit image
embeddings by cosine. Works on numpy or JAX arrays alike (the contrastive objective's evaluation runs it
traced; vitjax/evaluate/caption_evals.py on the host).
"""
import string

import jax.numpy as jnp


def prompts(classes, templates) -> list[str]:
    """The prompts of every class under every template, class-major ([class 0's templates, class 1's, ...]).

    Raises ValueError naming a template whose braces name a field the classes do not have."""
    fields = set(classes[0]) if classes else set()
    for template in templates:
        named = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
        unknown = sorted(named - fields)
        if unknown or not named:
            example = "a " + " ".join("{" + field + "}" for field in sorted(fields))
            raise ValueError(f"template {template!r} names {', '.join(map(repr, unknown)) or 'no field'}; a "
                             f"template names the classes' fields in braces, some of {sorted(fields)}, "
                             f"e.g. {example!r}")
    return [template.format(**fields_of_class) for fields_of_class in classes for template in templates]


def normalise(x, axis: int = -1):
    return x / jnp.linalg.norm(x, axis=axis, keepdims=True)


def class_embeddings(prompt_embeds, num_templates: int):
    """[classes, D] unit rows: the normalised mean of each class's normalised prompt embeddings, from
    `prompt_embeds` [classes * num_templates, D] in `prompts`' order."""
    per_class = normalise(prompt_embeds).reshape(-1, num_templates, prompt_embeds.shape[-1])
    return normalise(per_class.mean(axis=1))


def predict(image_embeds, classifier):
    """[N] the class of each image: the row of `classifier` with the largest dot product."""
    return jnp.argmax(image_embeds @ classifier.T, axis=-1)
