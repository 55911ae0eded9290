"""sentiment_appropriateness against seed 000's SAS loop with VADER."""

from __future__ import annotations

from .common import best_time, naive_normalize, same


def naive_sas(predictions, references, texts):
    """Seed 000's SAS loop with VADER: per model and review, VADER on every predicted
    keyword and on the review; the gold sentiment once per movie."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()

    def sentiment(text):
        scores = analyzer.polarity_scores(text)
        return 1.0 * scores["pos"] + 0.5 * scores["neu"] + 0.0 * scores["neg"]

    gold_sentiment = {}
    from_keywords, from_text = [], []
    for predicted, gold, text in zip(predictions, references, texts):
        if id(gold) not in gold_sentiment:
            kept = [k.strip() for k in _first_occurrences(gold)]
            gold_sentiment[id(gold)] = sum(map(sentiment, kept)) / len(kept)
        kept = [k.strip() for k in _first_occurrences(predicted)]
        if not kept:
            continue
        s_pred = sum(sentiment(k) for k in kept) / len(kept)
        from_keywords.append(1 - abs(s_pred - gold_sentiment[id(gold)]))
        from_text.append(1 - abs(s_pred - sentiment(text)))
    return {
        "sas_from_keywords": sum(from_keywords) / len(from_keywords),
        "sas_from_text": sum(from_text) / len(from_text),
    }


def _first_occurrences(keywords):
    seen, kept = set(), []
    for keyword in keywords:
        normalized = naive_normalize(keyword)
        if normalized and normalized not in seen:
            seen.add(normalized)
            kept.append(keyword)
    return kept


def sentiment(predictions, references, texts):
    from opinion_metrics import sentiment_appropriateness

    naive_time, naive_result = best_time(lambda: naive_sas(predictions, references, texts), 1)
    library_time, library_result = best_time(lambda: sentiment_appropriateness(predictions, references, texts=texts), 1)
    if not same(naive_result, library_result):
        raise SystemExit(f"SAS results differ\n{naive_result}\n{library_result}")
    print(f"{'sentiment_appropriateness':<34}{'naive s':>9}{'library s':>11}{'naive/lib':>11}")
    ratio = naive_time / library_time
    print(f"{'(4 models, with review texts)':<34}{naive_time:>9.1f}{library_time:>11.1f}{ratio:>10.1f}x")
    print("Target >= 4x: VADER once per distinct string instead of per keyword per model and per review per model.\n")
