"""Why a value is what it is: per example, the matched pairs, similarities and sentiments
behind a family's per-example values (the CLI's `--per-example`, the Spaces' explanations).

The detail is computed by the metric's own steps (preparation, presence, top-k cut, match
relation, encoder, sentiment function); only the choice of which pairs form the matching is
made here, a matching of the size (and weight) that the metric counts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.cutoffs import apply_top_k, cutoff_lengths
from ..core.matching import corpus_neighbors, maximum_matching_pairs
from ..core.normalization import make_normalizer
from ..core.preparation import PreparedCorpus, Vocabulary, prepare_corpus
from ..core.presence import select_presence
from ..core.validation import check_top_k
from ..families.options import INTERVAL_OPTIONS, RETURN_PER_EXAMPLE
from ..families.registry import get_family

# How to read a sentiment of the sentiment family, and what VADER cannot see.
SENTIMENT_SCALE = (
    "Sentiments run from 0 (negative) through 0.5 (neutral) to 1 (positive). VADER scores words from a "
    "lexicon of general English: short keywords without opinion words score 0.5, and it misses sarcasm, "
    'negation over long spans and domain words ("dark", "slow" can be praise in a film review).'
)
# Options that shape a value but not its explanation (intervals) or that only the values take.
_NOT_EXPLAINED = INTERVAL_OPTIONS | {RETURN_PER_EXAMPLE.name}


def _values(
    family: str, arguments: dict[str, Any], options: dict[str, Any], columns: Mapping[str, Sequence[Any]] | None
) -> list[dict[str, Any]]:
    """The family's own per-example values, one dict per example: from `columns` (its
    `per_example`) when given, else computed."""
    if columns is None:
        columns = get_family(family).function(**arguments, **options, return_per_example=True)["per_example"]
    count = max((len(values) for values in columns.values()), default=0)
    if count != len(arguments["predictions"]):
        raise ValueError(
            f"per_example holds values for {count} examples, but there are {len(arguments['predictions'])}: "
            "give the family's per_example for these inputs and options"
        )
    return [{key: values[index] for key, values in columns.items()} for index in range(count)]


def _prepared(
    predictions: Any, references: Any, options: dict[str, Any], texts: Any, scores: Any = None
) -> PreparedCorpus:
    """The corpus as the count-based families see it: prepared, presence applied, cut at top_k
    (the weighted family cuts per example itself)."""
    normalize, stemmer = options.get("normalize", "default"), options.get("stemmer")
    corpus = prepare_corpus(
        predictions,
        references,
        scores=scores,
        normalize=normalize,
        stemmer=stemmer,
        clip_scores=options.get("clip_scores", False),
        keep_originals=True,
    )
    corpus, _ = select_presence(corpus, texts, options.get("presence", "all"), normalize, stemmer)
    return corpus


def _lexical(family: str, corpus: PreparedCorpus, options: dict[str, Any]) -> list[dict[str, Any]]:
    defaults = get_family(family).defaults
    one_to_one = options.get("one_to_one", defaults["one_to_one"])
    top_k = check_top_k(options.get("top_k", defaults["top_k"]))
    if family == "keyword_prf":
        corpus = apply_top_k(corpus, top_k)
    neighbors = corpus_neighbors(corpus, options.get("match", defaults["match"]))
    cuts = cutoff_lengths(corpus, top_k) if family == "weighted_keyword_prf" else [None] * len(corpus)
    records = []
    for index, (example, cut) in enumerate(zip(neighbors, cuts)):
        predicted, gold = corpus.predictions.originals[index][:cut], corpus.references.originals[index]
        scores = corpus.predictions.scores[index][:cut] if corpus.predictions.scores is not None else None
        example = example[:cut]
        if one_to_one:
            order = sorted(range(len(example)), key=lambda i: -scores[i]) if scores is not None else None
            pairs = maximum_matching_pairs(example, order)
        else:
            pairs = [(i, j) for i, js in enumerate(example) for j in js]
        forms = _forms(corpus, index, cut)
        record: dict[str, Any] = {
            "predictions": list(predicted),
            "references": list(gold),
            "matches": [{"prediction": predicted[i], "reference": gold[j]} for i, j in pairs],
        }
        for match, (i, j) in zip(record["matches"], pairs):
            _add_forms(match, forms, i, j)
        matched = sorted({i for i, _ in pairs})
        record["unmatched_predictions"] = [keyword for i, keyword in enumerate(predicted) if i not in set(matched)]
        record["unmatched_references"] = [keyword for j, keyword in enumerate(gold) if j not in {j for _, j in pairs}]
        if forms[0] or forms[1]:  # each keyword as written, with the form that was compared
            record["normalized"] = {**{predicted[i]: form for i, form in forms[0].items()},
                                    **{gold[j]: form for j, form in forms[1].items()}}  # fmt: skip
        record["matched_predictions"] = len(matched)
        record["matched_references"] = len({j for _, j in pairs})
        if scores is not None:
            for match, (i, _) in zip(record["matches"], pairs):
                match["score"] = scores[i]
            record["scores"] = list(scores)
            record["matched_score"] = math.fsum(scores[i] for i in matched)
        records.append(record)
    return records


def _forms(corpus: PreparedCorpus, index: int, cut: int | None = None) -> tuple[dict[int, str], dict[int, str]]:
    """The normalized form of each kept prediction (up to `cut`) and gold keyword of example
    `index` where it differs from the keyword as written: what decided the match."""
    found: tuple[dict[int, str], dict[int, str]] = ({}, {})
    for side, forms in zip((corpus.predictions, corpus.references), found):
        ids, originals = side.ids[index], side.originals[index]
        limit = cut if side is corpus.predictions else None
        for position, (keyword_id, raw) in enumerate(list(zip(ids, originals))[:limit]):
            if corpus.strings[keyword_id] != raw:
                forms[position] = corpus.strings[keyword_id]
    return found


def _add_forms(match: dict[str, Any], forms: tuple[dict[int, str], dict[int, str]], i: int, j: int) -> None:
    if i in forms[0]:
        match["prediction_normalized"] = forms[0][i]
    if j in forms[1]:
        match["reference_normalized"] = forms[1][j]


def _pair(prediction: str, reference: str, similarity: float) -> dict[str, Any]:
    return {"prediction": prediction, "reference": reference, "similarity": float(similarity)}


def _semantic(corpus: PreparedCorpus, options: dict[str, Any]) -> list[dict[str, Any]]:
    from ..embeddings.cosines import exact_cosines
    from ..embeddings.encoder import KeywordEncoder, near_threshold

    defaults = get_family("semantic_keyword_prf").defaults
    settings = {
        name: options.get(name, defaults[name])
        for name in ("model", "device", "batch_size", "show_progress", "precision")
    }
    threshold = options.get("threshold", defaults["threshold"])
    one_to_one = options.get("one_to_one", defaults["one_to_one"])
    corpus = apply_top_k(corpus, check_top_k(options.get("top_k", defaults["top_k"])))
    encoder = KeywordEncoder(settings.pop("model"), **settings)
    used = sorted({i for ids in (*corpus.predictions.ids, *corpus.references.ids) for i in ids})
    matrix, rows_of = np.zeros((0, 1), dtype=np.float32), np.full(len(corpus.strings), -1, dtype=np.int64)
    if used:
        matrix, rows_of[used] = encoder.lookup([corpus.strings[i] for i in used])
    similarities = []  # per example: its pairs' cosines, as the family computes them near the threshold
    for predicted_ids, gold_ids in zip(corpus.predictions.ids, corpus.references.ids):
        first, second = np.meshgrid(
            np.array(predicted_ids, dtype=np.int64), np.array(gold_ids, dtype=np.int64), indexing="ij"
        )
        similarity = np.zeros(first.shape)
        if first.size:
            similarity = exact_cosines(matrix, rows_of, first.ravel(), second.ravel()).reshape(first.shape)
        similarities.append((first, second, similarity))
    band, exact = near_threshold(encoder, corpus.strings)
    if exact is not None:  # half precision: the pairs near the threshold in float32 (embedded in one call)
        nears = [np.abs(similarity - threshold) <= band for _, _, similarity in similarities]
        found = [np.zeros(0, np.int64)]
        for (first, second, _), near in zip(similarities, nears):
            found += [first[near], second[near]]
        exact.prefetch(np.concatenate(found))
        for (first, second, similarity), near in zip(similarities, nears):
            similarity[near] = exact(first[near], second[near])
    records = []
    for (_, _, similarity), predicted, gold in zip(
        similarities, corpus.predictions.originals, corpus.references.originals
    ):
        record: dict[str, Any] = {"predictions": list(predicted), "references": list(gold), "threshold": threshold}
        if predicted and gold:  # what soft precision and soft recall average (before clipping at 0)
            record["closest_references"] = [
                _pair(predicted[i], gold[j], similarity[i, j]) for i, j in enumerate(similarity.argmax(axis=1))
            ]
            record["closest_predictions"] = [
                _pair(predicted[i], gold[j], similarity[i, j]) for j, i in enumerate(similarity.argmax(axis=0))
            ]
        else:
            record["closest_references"], record["closest_predictions"] = [], []
        above = [np.flatnonzero(row >= threshold).tolist() for row in similarity]
        if one_to_one:
            pairs = maximum_matching_pairs(above)
        else:  # each prediction with its most similar gold keyword, when that reaches the threshold
            pairs = [(i, int(np.argmax(similarity[i]))) for i in range(len(above)) if above[i]]
        record["matches"] = [_pair(predicted[i], gold[j], similarity[i, j]) for i, j in pairs]
        record["matched_predictions"] = len(pairs)
        reached = {j for _, j in pairs} if one_to_one else set(np.flatnonzero((similarity >= threshold).any(axis=0)))
        record["matched_references"] = len(reached)
        # what recall misses: each gold keyword no prediction reached, with its closest prediction and cosine
        record["unmatched_references"] = [
            pair for j, pair in enumerate(record["closest_predictions"]) if j not in reached
        ]
        records.append(record)
    return records


def _sentiment(
    predictions: Any, references: Any, texts: Any, given: Any, options: dict[str, Any]
) -> list[dict[str, Any]]:
    from ..families.sentiment_appropriateness import _CachedSentiment, vader_sentiment

    defaults = get_family("sentiment_appropriateness").defaults
    function = options.get("sentiment") or vader_sentiment(options.get("mapping", defaults["mapping"]))
    score = _CachedSentiment(function)
    if references is None:
        references = [[] for _ in predictions]
    corpus = prepare_corpus(
        predictions,
        references,
        scores=given,
        normalize=options.get("normalize", "default"),
        stemmer=options.get("stemmer"),
        keep_originals=True,
        scores_name="prediction_sentiments",
    )
    records = []
    for index in range(len(corpus)):
        predicted, gold = corpus.predictions.originals[index], corpus.references.originals[index]
        own = corpus.predictions.scores
        sentiments = list(own[index]) if own is not None else [score(keyword) for keyword in predicted]
        text = None if texts is None else texts[index]
        record: dict[str, Any] = {
            "predictions": [{"keyword": k, "sentiment": s} for k, s in zip(predicted, sentiments)],
            "references": [{"keyword": k, "sentiment": score(k)} for k in gold],
            "prediction_sentiment": math.fsum(sentiments) / len(sentiments) if sentiments else None,
            "reference_sentiment": score.mean(gold) if gold else None,
            "text_sentiment": score(text) if text is not None and text.strip() else None,
        }
        records.append(record)
    return records


def _diversity(predictions: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
    vocabulary = Vocabulary(make_normalizer(options.get("normalize", "default"), options.get("stemmer")))
    records = []
    for keywords in predictions:
        forms: dict[int, list[str]] = {}
        for keyword in keywords:
            keyword_id = vocabulary.intern(keyword)
            if keyword_id is not None and keyword_id >= 0:
                forms.setdefault(keyword_id, []).append(keyword)
        repeated = [written for written in forms.values() if len(written) > 1]
        # unique_token_ratio counts the white-space tokens of the normalized keywords, repeats included
        counts = Counter(token for keyword_id, written in forms.items() for _ in written
                         for token in vocabulary.strings[keyword_id].split())  # fmt: skip
        tokens = [{"token": token, "count": count} for token, count in counts.items() if count > 1]
        normalized = {raw: vocabulary.strings[i] for i, written in forms.items() for raw in written
                      if vocabulary.strings[i] != raw}  # fmt: skip
        record = {"predictions": list(keywords), "repeated": repeated, "repeated_tokens": tokens}
        records.append({**record, "normalized": normalized} if normalized else record)
    return records


def _tuples(predictions: Any, references: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
    """Per example: the tuples as given, the assigned pairs with their credits, the tuples left
    unmatched, the repeats dropped and the segments of generated text that could not be read."""
    from ..core.tuple_matching import assign_example, stripped_key
    from ..core.tuple_text import read_predictions
    from ..core.tuples import SPAN_ELEMENTS, Preparer, check_elements, check_label_map

    defaults = get_family("sentiment_tuple_prf").defaults
    settings = {name: options.get(name, defaults[name]) for name in ("elements", "match", "counting", "format")}
    elements = check_elements(settings["elements"])
    segments: list[list[str]] = [[] for _ in predictions]
    if settings["format"] is not None:
        predictions, segments = read_predictions(predictions, settings["format"], elements)
    records = []
    if settings["counting"] == "membership":  # no assignment: each prediction in the gold list is a hit
        for predicted, gold in zip(predictions, references):
            keys = [stripped_key(item, elements) for item in gold]
            hits = [(item, keys.index(stripped_key(item, elements))) for item in predicted
                    if stripped_key(item, elements) in keys]  # fmt: skip
            found = {stripped_key(item, elements) for item in predicted}
            record = {"predictions": list(predicted), "references": list(gold)}
            record["matches"] = [{"prediction": item, "reference": gold[j]} for item, j in hits]
            record["unmatched_predictions"] = [item for item in predicted if stripped_key(item, elements) not in keys]
            record["unmatched_references"] = [item for item, key in zip(gold, keys) if key not in found]
            records.append(record)
    else:
        label_map = check_label_map(options.get("label_map", defaults["label_map"]))
        preparer = Preparer(elements, options.get("normalize", defaults["normalize"]), label_map)
        sides = [
            preparer.side(rows, name, keep=True)
            for rows, name in ((predictions, "predictions"), (references, "references"))
        ]
        spans = [name in SPAN_ELEMENTS for name in elements]
        for index in range(len(predictions)):
            rows, originals = [], []
            for side in sides:
                start, stop = side.offsets[index], side.offsets[index + 1]
                rows.append([tuple(row) for row in side.ids[start:stop].tolist()])
                originals.append(side.originals[start:stop])
            kept_pred, kept_gold, edges = assign_example(*rows, spans, preparer.forms, settings["match"])
            predicted, gold = originals
            record = {"predictions": predicted, "references": gold}
            record["matches"] = [
                {
                    "prediction": predicted[i],
                    "reference": gold[j],
                    "precision_credit": float(pc),
                    "recall_credit": float(rc),
                }
                for i, j, pc, rc in edges
            ]
            assigned = ({edge[0] for edge in edges}, {edge[1] for edge in edges})
            record["unmatched_predictions"] = [predicted[i] for i in kept_pred if i not in assigned[0]]
            record["unmatched_references"] = [gold[j] for j in kept_gold if j not in assigned[1]]
            record["repeated"] = [predicted[i] for i in range(len(predicted)) if i not in set(kept_pred)]
            record["repeated"] += [gold[j] for j in range(len(gold)) if j not in set(kept_gold)]
            records.append(record)
    if settings["format"] is not None:
        for record, unread in zip(records, segments):
            record["unreadable"] = list(unread)
    return records


def explain(
    family: str,
    predictions: Sequence[Any],
    references: Sequence[Any] | None = None,
    *,
    scores: Sequence[Any] | None = None,
    texts: Sequence[Any] | None = None,
    prediction_sentiments: Sequence[Any] | None = None,
    per_example: Mapping[str, Sequence[Any]] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """Per example, the family's per-example `values` and what produced them.

    - keyword_prf, weighted_keyword_prf: the kept `predictions` and `references` (after
      presence and top_k), the `matches` (prediction -> gold keyword; with its `score` for the
      weighted family, and the normalized forms that matched where they differ from the keywords
      as written: `prediction_normalized`, `reference_normalized`), `matched_predictions`,
      `matched_references` (`matched_score`), `unmatched_predictions`, `unmatched_references`;
    - semantic_keyword_prf: the cosine of each matched pair, the `threshold`, for each
      prediction (gold keyword) its most similar gold keyword (prediction) with their cosine
      (`closest_references`, `closest_predictions`: what the soft scores average), and the gold
      keywords no prediction reached with their closest one (`unmatched_references`: what
      recall misses);
    - sentiment_appropriateness: each keyword's sentiment, their means and the review's
      (0 negative, 0.5 neutral, 1 positive: `SENTIMENT_SCALE`);
    - sentiment_tuple_prf: the tuples as given, the assigned pairs (`matches`, with their
      `precision_credit` and `recall_credit`), the tuples left unmatched on each side, the
      repeats dropped (`repeated`) and, with `format`, the segments that could not be read
      (`unreadable`); with `counting="membership"`, each prediction found in the gold list;
    - keyword_diversity: the keywords written differently that normalize alike (`repeated`),
      the tokens used more than once (`repeated_tokens`: what lowers unique_token_ratio) and
      each keyword's normalized form where it differs (`normalized`).

    `options` are the family's options (as its function takes them); `prediction_sentiments`
    the sentiment family's optional input. `per_example`: the family's `per_example` on the
    same inputs and options, when already computed (`return_per_example=True`), so that the
    family does not run again. The aspect score is corpus-level and has no per-example
    explanation.

    Example:
        >>> record = explain("keyword_prf", [["social satire", "pizza"]], [["satire", "class"]])[0]
        >>> record["matches"], record["values"]["precision"]
        ([{'prediction': 'social satire', 'reference': 'satire'}], 0.5)
    """
    declaration = get_family(family)
    if family == "aspect_sentiment_score":
        raise ValueError("aspect_sentiment_score is corpus-level (per aspect): there is no per-example explanation")
    declaration.check_options(options)
    arguments: dict[str, Any] = {"predictions": predictions}
    if family != "keyword_diversity":
        arguments["references"] = references
    if family == "weighted_keyword_prf":
        arguments["scores"] = scores
    elif scores is not None:
        raise ValueError(f"{family} takes no scores")
    if texts is not None:
        arguments["texts"] = texts
    if prediction_sentiments is not None:
        if family != "sentiment_appropriateness":
            raise ValueError(f"{family} takes no prediction_sentiments")
        arguments["prediction_sentiments"] = prediction_sentiments
    shaping = {name: value for name, value in options.items() if name not in _NOT_EXPLAINED}
    values = _values(family, arguments, shaping, per_example)
    if family in ("keyword_prf", "weighted_keyword_prf"):
        records = _lexical(family, _prepared(predictions, references, shaping, texts, scores), shaping)
    elif family == "semantic_keyword_prf":
        records = _semantic(_prepared(predictions, references, shaping, texts), shaping)
    elif family == "sentiment_tuple_prf":
        records = _tuples(predictions, references, shaping)
    elif family == "sentiment_appropriateness":
        records = _sentiment(predictions, references, texts, prediction_sentiments, shaping)
    else:
        records = _diversity(predictions, shaping)
    for record, example_values in zip(records, values):
        record["values"] = example_values
    return records
