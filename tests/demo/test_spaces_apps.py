"""The Gradio Spaces over real HTTP (gradio_client): every family's app and the combined app
give the library's values, malformed input is a readable error, the apps build, and what a
visitor sees: the metric card, the API pages, each result's meaning, the semantic example."""

import importlib.util
import sys

import pytest
from conftest import REPO, space_values
from space_apps import call, running_clients, table

gradio = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from opinion_metrics import keyword_prf, weighted_keyword_prf  # noqa: E402
from opinion_metrics.demo.combined import build_combined_app  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402
from opinion_metrics.families.aspect_sentiment_score import aspect_sentiment_score  # noqa: E402
from opinion_metrics.families.registry import output_for  # noqa: E402


@pytest.fixture(scope="module")
def clients():
    yield from running_clients()


def test_keyword_app(clients):
    summary, per_example, _ = call(
        clients["keyword_prf"],
        "keyword_prf",
        "war; star wars; wars\nsocial satire",
        "star wars\nsatire; comedy",
        match="token",
        average="micro",
    )
    expected = keyword_prf(
        [["war", "star wars", "wars"], ["social satire"]],
        [["star wars"], ["satire", "comedy"]],
        match="token",
        average="micro",
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    assert per_example["headers"] == ["line", "precision", "recall", "f1"] and len(per_example["data"]) == 2


def test_weighted_app_and_top_k_option(clients):
    predictions = "scam (0.9); family (0.8); poverty (0.7); cinematography (0.6); fraud (0.5)"
    summary, _, _ = call(
        clients["weighted_keyword_prf"], "weighted_keyword_prf", predictions, "fraud; poverty; scam", top_k="2", k=5
    )
    expected = weighted_keyword_prf(
        [["scam", "family", "poverty", "cinematography", "fraud"]],
        [[0.9, 0.8, 0.7, 0.6, 0.5]],
        [["fraud", "poverty", "scam"]],
        top_k=2,
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    assert table(summary)["ndcg@5"] == 0.7295


def test_aspect_app_with_an_uploaded_csv(clients, tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("food,hotel,pred_food,pred_hotel\n0,5,0,4\n3,2,3,0\n", encoding="utf-8")
    summary, per_aspect, _ = call(
        clients["aspect_sentiment_score"],
        "aspect_sentiment_score",
        "",
        "",
        "food, hotel",
        gradio_client.handle_file(str(path)),
    )
    expected = aspect_sentiment_score([[0, 4], [3, 0]], [[0, 5], [3, 2]], aspects=["food", "hotel"])
    assert table(summary) == {"score": round(expected["score"], 4)}
    assert per_aspect["headers"] == ["aspect", "f1", "r2", "score", "both"]
    # hotel: presence F1 2/3; one review rated on both sides, error 1 over range 4: R2 = 1 - 1/16.
    assert per_aspect["data"] == [["food", 1.0, 1.0, 1.0, 1], ["hotel", 0.6667, 0.9375, 0.625, 1]]


def test_sentiment_and_semantic_apps(clients):
    pytest.importorskip("vaderSentiment")
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    summary, _, _ = call(
        clients["sentiment_appropriateness"],
        "sentiment_appropriateness",
        "great acting; moving story\nboring plot",
        "masterpiece\ndull",
        "Loved it.\nToo long.",
    )
    expected = sentiment_appropriateness(
        [["great acting", "moving story"], ["boring plot"]],
        [["masterpiece"], ["dull"]],
        texts=["Loved it.", "Too long."],
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    summary, _, _ = call(
        clients["semantic_keyword_prf"], "semantic_keyword_prf", "scam; family drama", "fraud; family", threshold=0.5
    )
    expected = semantic_keyword_prf([["scam", "family drama"]], [["fraud", "family"]], threshold=0.5)
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})


@pytest.mark.parametrize(
    ("name", "predictions", "references", "options", "message"),
    [
        ("keyword_prf", "a; b\nc", "a", {}, r"predictions has 2, references has 1 \(line 2 has no references\)"),
        ("keyword_prf", "", "", {}, "no examples"),
        ("keyword_prf", "a", "a", {"top_k": "ten"}, "top_k must be M, O or a positive integer"),
        ("weighted_keyword_prf", "a; b", "a", {}, "need a score per keyword"),
        ("weighted_keyword_prf", "a (1.5)", "a", {}, r"score 1.5 is outside \[0, 1\]; tick clip_scores"),
        ("aspect_sentiment_score", "0, 9, 0, 0, 0, 0", "0, 1, 0, 0, 0, 0", {}, r"rating 9 is outside \{0\} ∪ \[1, 5\]"),
        ("aspect_sentiment_score", "0, 1", "0, 1", {}, "predictions: line 1 has 2 ratings, expected 6"),
        # Non-integers where an integer is needed are errors, never rounded or truncated.
        (
            "aspect_sentiment_score",
            "0, 1, 0, 0, 0, 0",
            "0, 1, 0, 0, 0, 0",
            {"min_rating": 1.7},
            "min_rating must be an integer, got 1.7",
        ),
        ("weighted_keyword_prf", "a (0.5)", "a", {"k": 2.5}, "k must be an integer, got 2.5"),
    ],
)
def test_malformed_input_is_a_readable_error_not_a_traceback(clients, name, predictions, references, options, message):
    with pytest.raises(gradio_client.exceptions.AppError, match=message):
        call(clients[name], name, predictions, references, **options)


def test_combined_app_shows_every_keyword_family(clients):
    pytest.importorskip("sentence_transformers")
    _, result, _ = clients["combined"].predict(
        "great acting (0.9); moving story (0.6)",
        "masterpiece; moving story",
        "A moving film.",
        None,
        api_name="/compare",
    )
    values = {tuple(name.split(": ")): value for name, value in space_values(result).items()}
    families = {family for family, _ in values}
    assert families == {
        "keyword_prf",
        "weighted_keyword_prf",
        "semantic_keyword_prf",
        "sentiment_appropriateness",
        "keyword_diversity",
    }
    f1 = values["keyword_prf", "f1"]
    assert f1 == round(keyword_prf([["great acting", "moving story"]], [["masterpiece", "moving story"]])["f1"], 4)


def test_space_apps_import_and_build():
    for folder in sorted((REPO / "spaces").iterdir()):
        spec = importlib.util.spec_from_file_location(f"app_{folder.name}", folder / "app.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules.pop(spec.name, None)
        spec.loader.exec_module(module)
        assert isinstance(module.demo, gradio.Blocks)


def test_combined_app_never_passes_keyword_scores_as_sentiments(clients):
    """SPEC deviation 7: confidence scores are not sentiments. The SAS row equals the metric
    computed without prediction_sentiments (VADER on the keywords)."""
    pytest.importorskip("vaderSentiment")
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    _, result, _ = clients["combined"].predict(
        "great acting (0.9); moving story (0.6)\nboring plot (0.8); space (0.3)",
        "masterpiece; moving story\ndull; boring plot; space opera",
        "A moving, beautiful film.\nDull and far too long.",
        None,
        api_name="/compare",
    )
    rows = {
        name.split(": ")[1]: value
        for name, value in space_values(result).items()
        if name.startswith("sentiment_appropriateness: ")
    }
    expected = sentiment_appropriateness(
        [["great acting", "moving story"], ["boring plot", "space"]],
        [["masterpiece", "moving story"], ["dull", "boring plot", "space opera"]],
        texts=["A moving, beautiful film.", "Dull and far too long."],
    )
    assert rows == pytest.approx({k: round(v, 4) for k, v in expected.items()})


def test_the_semantic_app_refuses_a_model_outside_the_allow_list(clients):
    # The dropdown refuses it before the handler runs; the pool's check is a second wall.
    with pytest.raises(gradio_client.exceptions.AppError, match="is not in the list of choices"):
        call(clients["semantic_keyword_prf"], "semantic_keyword_prf", "a", "a", model="/etc/passwd")


@pytest.mark.parametrize("name", [*FAMILIES, "opinion_metrics"])
def test_the_metric_card_renders_under_the_app_without_its_yaml_header(name):
    app = build_combined_app() if name == "opinion_metrics" else build_app(name)
    texts = [block.value for block in app.blocks.values() if isinstance(block, gradio.Markdown)]
    card = (REPO / "spaces" / name / "README.md").read_text(encoding="utf-8")
    body = card.split("\n---\n", 1)[1].strip()
    assert body in texts and not any("sdk_version" in text for text in texts)


def test_the_api_pages_name_every_parameter(clients):
    for name, family in FAMILIES.items():
        parameters = clients[name].view_api(return_format="dict", print_info=False)["named_endpoints"]["/compute"]
        names = [parameter["parameter_name"] for parameter in parameters["parameters"]]
        prefix = ["prediction_prefix"] if "aspects" in family.inputs else []
        roles = ["predictions", "references", "scores", "texts", "system", "id"]
        if "aspects" in family.inputs:  # read by aspect
            roles = ["system", "id"]
        elif name == "sentiment_tuple_prf":  # no scores, no texts
            roles = ["predictions", "references", "system", "id"]
        columns = [f"{role}_column" for role in roles]  # the column-mapping step of an upload
        assert names == [*family.inputs, "upload", *prefix, *(o.name for o in family.options), "baseline", *columns]


def test_each_result_has_its_meaning(clients):
    for name, family in FAMILIES.items():
        summary, _, _ = call(clients[name], name, *family.example)
        assert summary["headers"] == ["metric", "value"]
        assert summary["data"][0] == ["examples", str(len(family.example[0].splitlines()))]
        for metric, value in summary["data"][1:]:  # the name, its direction, its meaning, range and direction
            key = metric.split("\u00a0")[0]
            output = output_for(name, key)
            direction = "higher is better" if output.higher_is_better else "lower is better"
            arrow = "↑" if output.higher_is_better else "↓"
            meaning = f"{output.meaning} ({output.range}, {direction})"
            assert metric == f"{key}\u00a0{arrow}<br><small>{meaning}</small>"
            assert "[" not in value  # no interval while intervals are off


def test_the_semantic_example_matches_paraphrases_that_strings_miss(clients):
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

    family = FAMILIES["semantic_keyword_prf"]
    predictions, references = (parse_keyword_lines(text)[0] for text in family.example[:2])
    summary, _, _ = call(clients[family.name], family.name, *family.example)
    expected = semantic_keyword_prf(predictions, references)
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    assert keyword_prf(predictions, references)["f1"] == 0.0 < expected["semantic_f1"]
