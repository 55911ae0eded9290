"""The Spaces' controls: the declared options with their meanings, choices and defaults (issue
12 item 1), the prefilled examples giving the library's values, and the semantic Space's
model box serving only its allow-list (issue 10 item 14)."""

import pytest
from conftest import space_values

from opinion_metrics.embeddings import encoder

pytest.importorskip("gradio")

from opinion_metrics import keyword_prf, weighted_keyword_prf  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines  # noqa: E402
from opinion_metrics.families.aspect_sentiment_score import aspect_sentiment_score  # noqa: E402


def test_the_model_box_serves_only_the_allow_list_and_keeps_few_models_loaded(monkeypatch):
    from opinion_metrics.demo.controls import MODELS_VARIABLE, ModelPool
    from opinion_metrics.embeddings.encoder import DEFAULT_MODEL

    loads = []

    def fake_load(name, device=None):
        model = object()
        encoder._LOADED_MODELS[(name, device)] = model  # what the library's loader caches
        loads.append(name)
        return model

    monkeypatch.setattr(encoder, "load_model", fake_load)
    pool, notices = ModelPool(size=2), []
    pool.on_load = notices.append
    monkeypatch.delenv(MODELS_VARIABLE, raising=False)
    for name in ("/etc", "/root/.cache/huggingface", "some-user/any-hub-repo"):
        with pytest.raises(ValueError) as error:
            pool.get(name)
        assert str(error.value) == "model: not allowed on this Space"  # nothing about paths
    assert loads == []
    monkeypatch.setenv(MODELS_VARIABLE, f"{DEFAULT_MODEL}, org/a, org/b")
    for name in (DEFAULT_MODEL, DEFAULT_MODEL, "org/a", "org/b", "org/a"):
        pool.get(name)
    assert loads == [DEFAULT_MODEL, "org/a", "org/b"] and notices == loads  # a notice on each load only
    assert list(pool.models) == ["org/b", "org/a"]  # the least recently used one was released
    assert not any(key[0] in loads for key in encoder._LOADED_MODELS)  # the library keeps none


def test_every_control_names_a_library_parameter_and_opens_at_its_default():
    import inspect

    from opinion_metrics.demo.controls import keyword_options as _keyword_options
    from opinion_metrics.families.keyword_diversity import keyword_diversity
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness
    from opinion_metrics.families.sentiment_tuple_prf import sentiment_tuple_prf

    functions = {
        "keyword_prf": keyword_prf,
        "weighted_keyword_prf": weighted_keyword_prf,
        "semantic_keyword_prf": semantic_keyword_prf,
        "sentiment_appropriateness": sentiment_appropriateness,
        "keyword_diversity": keyword_diversity,
        "aspect_sentiment_score": aspect_sentiment_score,
        "sentiment_tuple_prf": sentiment_tuple_prf,
    }
    assert set(functions) == set(FAMILIES)
    for name, family in FAMILIES.items():
        parameters = inspect.signature(functions[name]).parameters
        shown = {o.name: o.default for o in family.options if o.kind != "model"}
        assert _keyword_options(shown) == {key: parameters[key].default for key in shown}, name
        assert all(o.default in o.choices for o in family.options if o.kind == "choice"), name


def test_the_prefilled_examples_give_the_librarys_values():
    pytest.importorskip("vaderSentiment")
    from opinion_metrics.demo.handlers import run
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    def lists(text):
        return parse_keyword_lines(text)[0]

    def results(name):
        family = FAMILIES[name]
        _, summary, rows, _ = run(
            name, *family.example, *[""] * (3 - len(family.example)), None, *(o.default for o in family.options)
        )
        return space_values(summary), rows

    predictions, references, _ = FAMILIES["keyword_prf"].example
    expected = keyword_prf(lists(predictions), lists(references))
    assert results("keyword_prf")[0] == {k: round(v, 4) for k, v in expected.items()}
    predictions, references, texts = FAMILIES["sentiment_appropriateness"].example
    expected = sentiment_appropriateness(
        lists(predictions), lists(references), texts=texts.split("\n"), return_per_example=True
    )
    summary, rows = results("sentiment_appropriateness")
    assert summary == {k: round(v, 4) for k, v in expected.items() if k != "per_example"}
    assert rows["sas_from_keywords"].tolist()[2] < 0.2 < 0.7 < min(rows["sas_from_keywords"].tolist()[:2])
    predictions, references, _ = FAMILIES["weighted_keyword_prf"].example
    scored = parse_keyword_lines(predictions)
    expected = weighted_keyword_prf(scored[0], scored[1], lists(references), return_per_example=True)
    summary, rows = results("weighted_keyword_prf")
    assert summary == {k: round(v, 4) for k, v in expected.items() if k != "per_example"}
    assert rows["ndcg@5"].tolist() == [0.7295, 1.0]  # SPEC section 4's worked example, then the ideal order


def test_the_controls_are_the_declared_options_with_their_meanings_and_choices():
    from opinion_metrics.core.tuples import PRESETS
    from opinion_metrics.demo.controls import NOT_IN_THE_SPACES
    from opinion_metrics.families import registry as declared

    for name, family in FAMILIES.items():
        declaration = declared.FAMILIES[name]
        expected = [o for o in declaration.options if o.name not in NOT_IN_THE_SPACES]
        assert [o.name for o in family.options] == [o.name for o in expected], name
        for control, option in zip(family.options, expected):
            if option.name not in ("model", "confidence_level"):  # those two: in the Space's words
                assert control.info.startswith(option.meaning), (name, option.name)
            if option.name == "elements":  # presets or element names in the library, the presets here
                assert list(control.choices) == list(PRESETS) and control.kind == "choice"
            elif control.kind == "choice":
                assert list(control.choices) == ["none" if c is None else c for c in option.choices]
        assert family.title == declaration.title
        assert family.meanings == declared.output_meanings(name)
