"""The Gradio Spaces: input parsing, every app over real HTTP (gradio_client), one app in
headless Chromium, and the staged Hub folders of scripts/publish.py."""

import importlib.util
import json
import os
import re
import shutil
import sys
import time

import pytest
from conftest import REPO, VIEWPORT, space_results, space_values
from packaging.version import Version

from opinion_metrics.demo import comparing
from opinion_metrics.embeddings import encoder

gradio = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from opinion_metrics import keyword_prf, weighted_keyword_prf  # noqa: E402
from opinion_metrics.demo.combined import build_combined_app  # noqa: E402
from opinion_metrics.demo.comparing import compare_families  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines, parse_rating_lines  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402
from opinion_metrics.families.aspect_sentiment_score import aspect_sentiment_score  # noqa: E402
from opinion_metrics.families.registry import FAMILIES as FAMILIES_DECLARED  # noqa: E402


def test_parse_keyword_lines():
    keywords, scores = parse_keyword_lines("social satire (0.8); pizza (0.1)\n\nspace opera (1)\n")
    assert keywords == [["social satire", "pizza"], [], ["space opera"]]
    assert scores == [[0.8, 0.1], [], [1.0]]
    assert parse_keyword_lines("a; b;; c") == ([["a", "b", "c"]], None)
    assert parse_keyword_lines("star wars (episode iv)") == ([["star wars (episode iv)"]], None)
    assert parse_keyword_lines("a (-0.25); b (1e-1)")[1] == [[-0.25, 0.1]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a (0.5); b", "line 1: give a score to every keyword or to none"),
        ("a (0.5)\nb", "some lines have scores and others not"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_keyword_lines(text)


def test_parse_ratings():
    assert parse_rating_lines("0, 4,5\n1 2 3") == [[0, 4, 5], [1, 2, 3]]
    with pytest.raises(ValueError, match="line 2: ratings must be integers"):
        parse_rating_lines("0,1\n0,x")


def launch(app):
    _, url, _ = app.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    return url


@pytest.fixture(scope="module")
def clients():
    apps, clients = {}, {}
    for name in FAMILIES:
        apps[name] = build_app(name)
        clients[name] = gradio_client.Client(launch(apps[name]), verbose=False)
    apps["combined"] = build_combined_app()
    clients["combined"] = gradio_client.Client(launch(apps["combined"]), verbose=False)
    yield clients
    for app in apps.values():
        app.close()


def table(result):
    return space_values(result)


def call(client, name, predictions, references="", extra="", upload=None, **options):
    """The app's API call: its text boxes, the upload, (the aspect prefix,) its options.
    Returns (summary, per-example table, plot), after checking the status line."""
    family = FAMILIES[name]
    boxes = [predictions, references, extra][: len(family.inputs)]
    prefix = [options.pop("prediction_prefix", "pred_")] if "aspects" in family.inputs else []
    values = [options.get(o.name, o.default) for o in family.options]
    status, *outputs = client.predict(*boxes, upload, *prefix, *values, api_name="/compute")
    assert status.startswith("Computed on ")
    return outputs


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


@pytest.mark.slow
@pytest.mark.parametrize("name", [*FAMILIES, "opinion_metrics"])
def test_each_space_in_headless_chromium_explains_itself(browser, name, tmp_path, monkeypatch):
    """At 1400x1000: the card under the app, the example prefilled, Compute above the
    fold, and after one click the results with their meanings in view (screenshots kept
    in $OPINION_METRICS_SCREENSHOTS when set)."""
    from playwright.sync_api import expect

    from opinion_metrics.demo import controls as families
    from opinion_metrics.demo.controls import meaning
    from opinion_metrics.demo.ui import metric_card

    if name in ("semantic_keyword_prf", "keyword_diversity", "opinion_metrics"):
        pytest.importorskip("sentence_transformers")
    if name in ("sentiment_appropriateness", "opinion_metrics"):
        pytest.importorskip("vaderSentiment")
    combined = name == "opinion_metrics"
    if name == "semantic_keyword_prf":  # a Space just started: no model loaded yet
        monkeypatch.setattr(families, "MODELS", families.ModelPool())
    app = build_combined_app() if combined else build_app(name)
    url = launch(app)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(url)
        button = page.get_by_role("button", name="Compute")
        expect(button).to_be_visible(timeout=30_000)
        heading = next(line for line in metric_card(name).splitlines() if line.startswith("# "))[2:]
        expect(page.get_by_role("heading", name=heading)).to_be_attached()
        prefilled = page.get_by_label("predictions").input_value()
        if not combined:
            assert prefilled == FAMILIES[name].example[0]
        assert prefilled.strip()
        box = button.bounding_box()
        assert box["y"] + box["height"] <= VIEWPORT["height"]
        page.screenshot(path=str(tmp_path / f"{name}-opened.png"))
        button.click()  # (the model loads with the page: tests/demo/test_spaces_readable.py checks its notice)
        expect(page.get_by_text("Computed on the text boxes").first).to_be_visible(timeout=120_000)
        results = page.locator("div.table-wrap").first
        expected = FAMILIES["keyword_prf" if combined else name]
        first_key = "precision" if combined else next(iter(expected.meanings))
        expect(results).to_contain_text(meaning(expected, first_key))
        top = results.bounding_box()["y"]
        assert 0 <= top < VIEWPORT["height"]  # the results are in view without scrolling
        page.screenshot(path=str(tmp_path / f"{name}-computed.png"))
        # Intervals on: a [low, high] next to each value.
        page.get_by_label("confidence intervals (95%)").first.check()
        button.click()
        expect(results).to_contain_text(re.compile(r"\[-?\d\.\d{4},\s-?\d\.\d{4}\]"), timeout=120_000)
        page.wait_for_timeout(1000)  # let the updated outputs fade in before the screenshot
        page.screenshot(path=str(tmp_path / f"{name}-intervals.png"))
        if combined:  # the comparison tab, prefilled with three systems, B clearly better than A
            page.get_by_role("tab", name="compare systems").click()
            page.get_by_role("button", name="Compare", exact=True).click()
            expect(page.get_by_text("A against B, C, 8 examples")).to_be_visible(timeout=120_000)
            comparison = page.locator("div.table-wrap").filter(has_text="p (Holm)")
            expect(comparison).to_contain_text("yes")
            page.evaluate("window.scrollTo(0, 0)")
            page.wait_for_timeout(1000)
            page.screenshot(path=str(tmp_path / f"{name}-compared.png"))
    finally:
        page.close()
        app.close()
    assert (tmp_path / f"{name}-computed.png").stat().st_size > 10_000
    if os.environ.get("OPINION_METRICS_SCREENSHOTS"):
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, os.environ["OPINION_METRICS_SCREENSHOTS"])


@pytest.mark.slow
@pytest.mark.parametrize("combined", [False, True], ids=["keyword_prf", "opinion_metrics"])
def test_a_click_while_a_computation_runs_is_computed_after_it_not_dropped(browser, combined, monkeypatch):
    """Computing is slow (2 s here): the page's own computation and a first click are still
    running when the user turns intervals on and clicks again; that last click still runs."""
    from playwright.sync_api import expect

    from opinion_metrics.demo import ui

    def slowly(function):
        def slow(*args, **keywords):
            time.sleep(2)
            return function(*args, **keywords)

        return slow

    monkeypatch.setattr(ui, "_evaluate", slowly(ui._evaluate))
    monkeypatch.setattr(comparing, "compare_families", slowly(comparing.compare_families))
    app = build_combined_app() if combined else build_app("keyword_prf")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(launch(app))
        button = page.get_by_role("button", name="Compute")
        button.click()
        page.get_by_label("confidence intervals (95%)").first.check()
        button.click()
        results = page.locator("div.table-wrap").first
        expect(results).to_contain_text(re.compile(r"\[-?\d\.\d{4},\s-?\d\.\d{4}\]"), timeout=60_000)
    finally:
        page.close()
        app.close()


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("publish", REPO / "scripts" / "publish.py")
    publish = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(publish)
    out = tmp_path_factory.mktemp("spaces")
    assert publish.main(["--dry-run", "--out", str(out)]) == 0
    return publish, out


@pytest.mark.parametrize("name", [*FAMILIES, "opinion_metrics"])
def test_staged_space_has_valid_metadata_and_pinned_requirements(staged, name):
    from huggingface_hub import RepoCard

    publish, out = staged
    folder = out / name
    card = RepoCard.load(folder / "README.md")
    assert card.data.sdk == "gradio" and card.data.app_file == "app.py"
    # A current Gradio 6 release, not newer than the one the apps are tested with.
    declared, installed = Version(card.data.sdk_version), Version(gradio.__version__)
    assert declared.major == installed.major == 6 and declared <= installed
    assert "evaluate" in card.data.tags and {"metric", "measurement"} & set(card.data.tags)
    assert card.data.python_version == "3.11"  # not Hugging Face's default Python
    assert (folder / "app.py").exists()
    # The release from PyPI, pinned: the version this checkout is.
    requirement = (folder / "requirements.txt").read_text().splitlines()[0]
    assert re.fullmatch(rf"opinion-metrics\[[a-z,-]+\]=={re.escape(publish.version())}", requirement)
    assert not (folder / "wheels").exists()


def test_publishing_refuses_a_version_pypi_does_not_have(staged, tmp_path, monkeypatch, capsys):
    publish, _ = staged
    monkeypatch.setattr(publish, "released", lambda release: False)
    monkeypatch.setenv("HF_TOKEN", "hf_not_used")
    assert publish.main(["--out", str(tmp_path)]) == 2
    assert f"opinion-metrics {publish.version()} is not on PyPI" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_bundled_wheel_is_installed_from_the_spaces_own_files_on_the_hub(staged, tmp_path):
    """Hugging Face installs requirements.txt before the Space's other files are there, so a
    bundled wheel is named by its address on the Hub, never by a local path."""
    publish, _ = staged
    assert publish.main(["--dry-run", "--bundle-wheel", "--namespace", "me", "--out", str(tmp_path)]) == 0
    for name in ("keyword_prf", "opinion_metrics"):
        (wheel,) = (tmp_path / name / "wheels").glob("*.whl")
        assert wheel.name == f"opinion_metrics-{publish.version()}-py3-none-any.whl"
        requirement = (tmp_path / name / "requirements.txt").read_text().splitlines()[0]
        url = f"https://huggingface.co/spaces/me/{name}/resolve/main/wheels/{wheel.name}"
        assert re.fullmatch(rf"opinion-metrics\[[a-z,-]+\] @ {re.escape(url)}", requirement)


@pytest.mark.parametrize("name", ["keyword_prf", "weighted_keyword_prf", "aspect_sentiment_score"])
def test_staged_module_loads_and_computes(staged, name):
    evaluate = pytest.importorskip("evaluate")
    _, out = staged
    module = evaluate.load(str(out / name))
    inputs = {
        "keyword_prf": {"predictions": [["a", "b"]], "references": [["a"]]},
        "weighted_keyword_prf": {"predictions": [["a", "b"]], "scores": [[0.5, 0.5]], "references": [["a"]]},
        "aspect_sentiment_score": {"predictions": [[0, 1]], "references": [[0, 1]], "aspects": ["x", "y"]},
    }[name]
    result = module.compute(**inputs)
    assert result and all(0.0 <= value <= 1.0 for value in result.values())


def test_space_apps_import_and_build():
    for folder in sorted((REPO / "spaces").iterdir()):
        spec = importlib.util.spec_from_file_location(f"app_{folder.name}", folder / "app.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules.pop(spec.name, None)
        spec.loader.exec_module(module)
        assert isinstance(module.demo, gradio.Blocks)


def test_ndcg_by_rank_plot_shows_ndcg_at_each_cut_off_of_the_slider_and_marks_k():
    from opinion_metrics import map_at_k, ndcg_at_k
    from opinion_metrics.demo.plots import plot_ndcg_by_rank

    data = {
        "predictions": [["scam", "family", "poverty", "cinematography", "fraud"], ["x"]],
        "references": [["fraud", "poverty", "scam"], ["x", "y"]],
    }
    options = {"match": "token", "normalize": "default", "stemmer": "none", "relevance": "binary", "k": 3}
    slider = next(option for option in FAMILIES["weighted_keyword_prf"].options if option.name == "k")
    axes = plot_ndcg_by_rank(data, options, max_k=int(slider.bounds[1])).axes[0]
    curve, marker, map_curve = axes.lines
    expected = [ndcg_at_k(**data, k=k, match="token", relevance="binary") for k in range(1, 21)]
    assert list(curve.get_xdata()) == list(range(1, 21))
    assert list(curve.get_ydata()) == pytest.approx(expected)
    expected = [map_at_k(**data, k=k, match="token") for k in range(1, 21)]
    assert list(map_curve.get_ydata()) == pytest.approx(expected)
    assert list(marker.get_xdata()) == [3, 3]  # the chosen k, dashed
    assert axes.get_xlabel() == "rank cut-off k" and axes.get_ylabel() == "mean (higher is better)"
    # by default, up to the longest prediction list (5 here)
    assert list(plot_ndcg_by_rank(data, options).axes[0].lines[0].get_xdata()) == [1, 2, 3, 4, 5]


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


# --- upload limits (issue 10 item 13) -------------------------------------------------


def test_uploads_are_capped_at_launch_and_typed_in_every_app():
    from opinion_metrics.demo.parsing import MAX_UPLOAD_MB, UPLOAD_TYPES

    for app in (build_app("keyword_prf"), build_combined_app()):
        launch(app)
        try:
            assert app.max_file_size == MAX_UPLOAD_MB * 1_000_000
            files = [block for block in app.blocks.values() if isinstance(block, gradio.File)]
            assert files and all(block.file_types == UPLOAD_TYPES for block in files)
            # the limit is said above each upload box (its own label stays short: its buttons would hide more)
            markdown = [block.value or "" for block in app.blocks.values() if isinstance(block, gradio.Markdown)]
            hints = [text for text in markdown if f"up to {MAX_UPLOAD_MB} MB" in text]
            assert len(hints) >= len(files) and all(len(block.label) <= 10 for block in files)
        finally:
            app.close()


def test_a_compressed_upload_that_expands_too_far_is_refused_in_bounded_memory(tmp_path):
    import gzip
    import tracemalloc

    from opinion_metrics.demo.parsing import read_upload

    path = tmp_path / "bomb.jsonl.gz"
    line = b'{"predictions": ["a"], "references": ["a"]}\n'
    with gzip.open(path, "wb", compresslevel=1) as out:
        block = line * (1_000_000 // len(line))
        for _ in range(300):  # 300 MB once decompressed
            out.write(block)
    tracemalloc.start()
    with pytest.raises(ValueError, match="bomb.jsonl.gz expands to more than 50 MB"):
        read_upload(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8_000_000  # 1 MB chunks, never the whole file


def test_an_upload_over_the_size_limit_or_corrupt_is_refused(tmp_path):
    from opinion_metrics.demo.parsing import check_upload_size

    path = tmp_path / "big.csv"
    path.write_bytes(b"predictions,references\n" + b"a,a\n" * 300_000)  # 1.2 MB
    with pytest.raises(ValueError, match="big.csv is larger than 1 MB"):
        check_upload_size(path, max_mb=1)
    corrupt = tmp_path / "x.JSONL.GZ"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ValueError, match="x.JSONL.GZ: corrupt gzip data"):
        check_upload_size(corrupt)


def test_the_combined_app_reads_an_upload_once(tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("vaderSentiment")
    from opinion_metrics.demo import parsing

    reads = []
    real = parsing.read_table
    monkeypatch.setattr(parsing, "read_table", lambda *args: reads.append(args) or real(*args))
    path = tmp_path / "rows.jsonl"
    path.write_text('{"predictions": ["moving story"], "references": ["moving story"], "scores": [0.5]}\n')
    status, frame, _, _ = compare_families("", "", "", str(path))
    assert len(reads) == 1
    assert {name.split(": ")[0] for name in space_values(frame)} == set(FAMILIES) - {"aspect_sentiment_score"}
    assert status == "Computed on the uploaded file `rows.jsonl`: 1 example · every family with its default options."


# --- the semantic Space's models (issue 10 item 14) -----------------------------------


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


def test_the_semantic_app_refuses_a_model_outside_the_allow_list(clients):
    # The dropdown refuses it before the handler runs; the pool's check is a second wall.
    with pytest.raises(gradio_client.exceptions.AppError, match="is not in the list of choices"):
        call(clients["semantic_keyword_prf"], "semantic_keyword_prf", "a", "a", model="/etc/passwd")


# --- errors and inputs in the Space's own words (issue 10 items 15-17) ------------------


def space_error(name, *args, **keywords):
    from opinion_metrics.demo.handlers import run

    family = FAMILIES[name]
    values = [keywords.pop(o.name, o.default) for o in family.options]
    with pytest.raises(gradio.Error) as error:
        run(name, *args, *values, **keywords)
    return error.value.message


def test_errors_count_text_box_lines_from_1_and_name_the_controls():
    message = space_error("weighted_keyword_prf", "a (0.5)\nb (1.5)", "a\nb", "", None)
    assert message.startswith("scores: line 2, keyword 0 ('b'): score 1.5 is outside [0, 1]; tick clip_scores")


def test_errors_locate_an_uploaded_row_and_are_html_escaped(tmp_path):
    path = tmp_path / "upload.jsonl"
    rows = [
        '{"predictions": ["a"], "references": ["a"], "scores": [0.5]}',
        '{"predictions": ["b"], "references": ["b"], "scores": [2]}',
    ]
    path.write_text("\n".join(rows) + "\n")
    message = space_error("weighted_keyword_prf", "", "", "", str(path))
    assert message.startswith("scores: line 2 of upload.jsonl (example 1 counting from 0), keyword 0 ('b'): score 2")
    # The error box renders HTML: "<" is escaped, never eaten as a tag.
    message = space_error(
        "aspect_sentiment_score", "0, 1, 0, 0, 0, 0", "0, 1, 0, 0, 0, 0", "", None, min_rating=5, max_rating=3
    )
    assert "1 &lt;= min_rating &lt; max_rating" in message


def test_the_aspect_upload_error_names_its_columns(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("food,hotel,pred_food\n0,5,0\n", encoding="utf-8")
    message = space_error("aspect_sentiment_score", "", "", "food, hotel", str(path))
    assert "missing: `pred_hotel` (found: `food`, `hotel`, `pred_food`)" in message
    path.write_text("food,hotel,model_food,model_hotel\n0,5,0,4\n", encoding="utf-8")
    assert "missing: `pred_food`, `pred_hotel`" in space_error(
        "aspect_sentiment_score", "", "", "food, hotel", str(path)
    )
    from opinion_metrics.demo.handlers import run

    defaults = [o.default for o in FAMILIES["aspect_sentiment_score"].options]
    status, summary, _, _ = run(
        "aspect_sentiment_score", "", "", "food, hotel", str(path), *defaults, prediction_prefix="model_"
    )
    assert list(space_values(summary).values()) == [
        round(aspect_sentiment_score([[0, 4]], [[0, 5]], aspects=["food", "hotel"])["score"], 4)
    ]
    assert "prediction_prefix is empty" in space_error(
        "aspect_sentiment_score", "", "", "food, hotel", str(path), prediction_prefix=""
    )


def test_an_upload_and_typed_text_never_override_each_other_silently(tmp_path):
    from opinion_metrics.demo.handlers import run

    path = tmp_path / "rows.csv"
    path.write_text("predictions,references\nx; y,x\n", encoding="utf-8")
    defaults = [o.default for o in FAMILIES["keyword_prf"].options]
    status, summary, rows, _ = run("keyword_prf", "a", "b", "", str(path), *defaults)
    assert rows["line"].tolist() == [2]  # the file's line (after the header)
    assert status == (
        "Computed on the uploaded file `rows.csv` (the text boxes are not used while a file is uploaded): 1 example"
        " · presence all · match substring · normalize default · stemmer none · one_to_one on · average macro"
        " · top_k M · zero_division 0"
    )
    expected = keyword_prf([["x", "y"]], [["x"]])
    assert space_values(summary) == {k: round(v, 4) for k, v in expected.items()}


def test_the_tourism_datas_vietnamese_columns_are_read_as_the_default_aspects(tmp_path):
    import csv

    from conftest import TOURISM_REVIEWS, require_shared

    from opinion_metrics.demo.handlers import run
    from opinion_metrics.families.aspect_sentiment_score import DEFAULT_ASPECTS, VIETNAMESE_COLUMNS

    with open(require_shared(TOURISM_REVIEWS), encoding="utf-8", newline="") as source:
        gold = [[int(row[c]) for c in VIETNAMESE_COLUMNS] for _, row in zip(range(200), csv.DictReader(source))]
    predicted = [[min(5, r + 1) if r and i % 3 == 0 else r for r in row] for i, row in enumerate(gold)]
    predicted = [[0 if i % 7 == 0 else r for r in row] for i, row in enumerate(predicted)]
    path = tmp_path / "tourism.csv"
    with open(path, "w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow([*VIETNAMESE_COLUMNS, *(f"pred_{c}" for c in VIETNAMESE_COLUMNS)])
        writer.writerows(g + p for g, p in zip(gold, predicted))
    defaults = [o.default for o in FAMILIES["aspect_sentiment_score"].options]
    status, summary, per_aspect, _ = run("aspect_sentiment_score", "", "", "", str(path), *defaults)
    expected = aspect_sentiment_score(predicted, gold)
    assert list(space_values(summary).values()) == [round(expected["score"], 4)]
    assert per_aspect["f1"].tolist() == [round(expected[f"f1_{a}"], 4) for a in DEFAULT_ASPECTS]
    assert "read `giai_tri` as entertainment" in status
    # The data itself has gold ratings only: the error names the predicted columns it needs.
    message = space_error("aspect_sentiment_score", "", "", "", str(TOURISM_REVIEWS))
    assert "missing: `pred_giai_tri`, `pred_luu_tru`" in message


def test_an_aspect_without_overlapping_ratings_shows_no_r2():
    from opinion_metrics.demo.handlers import run

    family = FAMILIES["aspect_sentiment_score"]
    _, _, per_aspect, _ = run(family.name, *family.example, None, *(o.default for o in family.options))
    r2 = dict(zip(per_aspect["aspect"], per_aspect["r2"]))
    # shopping is 0 in every review on both sides (the metric reports R2 1.0 for it).
    assert r2["shopping"] == "n/a (no overlap)" and per_aspect["both"].tolist()[-1] == 0
    assert all(isinstance(value, float) for aspect, value in r2.items() if aspect != "shopping")


# --- what a visitor sees (issue 12 item 4) -------------------------------------------------


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
        roles = (
            ["system", "id"]
            if "aspects" in family.inputs
            else ["predictions", "references", "scores", "texts", "system", "id"]
        )
        columns = [f"{role}_column" for role in roles]  # the column-mapping step of an upload
        assert names == [*family.inputs, "upload", *prefix, *(o.name for o in family.options), "baseline", *columns]


def test_each_result_has_its_meaning(clients):
    for name, family in FAMILIES.items():
        summary, _, _ = call(clients[name], name, *family.example)
        assert summary["headers"] == ["metric", "value"]
        assert summary["data"][0] == ["examples", str(len(family.example[0].splitlines()))]
        for metric, value in summary["data"][1:]:  # the name, its direction, its meaning, range and direction
            key = metric.split("\u00a0")[0]
            output = next(o for o in FAMILIES_DECLARED[name].outputs if re.fullmatch(o.key.replace("{k}", r"\d+"), key))
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


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_staged_space_installs_from_its_own_requirements_and_serves(tmp_path):
    """The keyword_prf Space as publish.py stages it, installed into a fresh virtualenv
    from its requirements.txt alone (no torch), with this checkout's wheel standing for the
    PyPI release it pins (`--find-links`), started with `python app.py` and driven over
    HTTP; its evaluate module loads there too."""
    import subprocess
    import time
    import urllib.request

    spec = importlib.util.spec_from_file_location("publish", REPO / "scripts" / "publish.py")
    publish = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(publish)
    assert publish.main(["--dry-run", "--only", "keyword_prf", "--out", str(tmp_path / "staged")]) == 0
    folder = tmp_path / "staged" / "keyword_prf"
    release = publish.build_wheel(tmp_path / "release")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    pin = tmp_path / "torch.txt"
    pin.write_text("torch==2.13.0\n")  # should anything pull torch, never another build
    constraints = " ".join(filter(None, [os.environ.get("PIP_CONSTRAINT"), str(pin)]))
    environment = {**os.environ, "PIP_CONSTRAINT": constraints}
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--find-links", str(release.parent), "-r", "requirements.txt"],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    loaded = subprocess.run(
        [
            python,
            "-c",
            "import evaluate; module = evaluate.load('keyword_prf.py'); "
            "print(module.compute(predictions=[['a', 'b']], references=[['a']]))",
        ],
        cwd=folder,
        env={**environment, "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.strip().splitlines()[-1] == str(keyword_prf([["a", "b"]], [["a"]]))
    port = _free_port()
    server = subprocess.Popen(
        [python, "app.py"],
        cwd=folder,
        env={
            **environment,
            "GRADIO_SERVER_PORT": str(port),
            "GRADIO_ANALYTICS_ENABLED": "False",
            "HF_HUB_OFFLINE": "1",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(240):  # wait for the server to answer
            try:
                urllib.request.urlopen(url, timeout=5)
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()[-3000:]
                time.sleep(0.5)
        family = FAMILIES["keyword_prf"]
        client = gradio_client.Client(url, verbose=False)
        status, summary, _, _ = client.predict(
            *family.example, None, *(o.default for o in family.options), api_name="/compute"
        )
        predictions, references = (parse_keyword_lines(text)[0] for text in family.example[:2])
        expected = keyword_prf(predictions, references)
        assert status.startswith("Computed on the text boxes: 2 examples · presence all · match substring")
        assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
        assert all("<small>" in row[0] for row in summary["data"][1:])  # each value with its meaning
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_plots_count_in_integers_label_small_bars_and_keep_legends_off_the_bars():
    from matplotlib.ticker import MaxNLocator

    from opinion_metrics.demo.plots import plot_aspects, plot_distribution, plot_systems

    axes = plot_distribution([0.5, 0.55, 1.0], "f1").axes[0]
    assert isinstance(axes.yaxis.get_major_locator(), MaxNLocator)
    assert all(float(tick).is_integer() for tick in axes.yaxis.get_major_locator().tick_values(0, 2))
    assert axes.get_xlabel() == "per-example f1" and axes.get_ylabel() == "number of examples"
    per_aspect = {"aspect": ["food", "hotel"], "f1": [0.004, 1.0], "r2": [0.5, "n/a (no overlap)"]}
    figure = plot_aspects(per_aspect, 0.002)
    axes = figure.axes[0]
    assert axes.get_legend() is None and len(figure.legends) == 1  # beside the axes, not over the bars
    assert [text.get_text() for text in axes.texts] == ["0.004", "1.00", "0.50", "n/a"]
    axes = plot_systems({"": {"keyword_prf": {"f1": 0.001, "recall": 0.5}}}).axes[0]
    assert [text.get_text() for text in axes.texts] == ["0.001", "0.500"]


@pytest.mark.parametrize(
    ("file_name", "content", "message"),
    [
        ("rows.csv", b"predictions,references\na,a\nb,b,c\n", "rows.csv, line 3: 3 fields, but the header has 2"),
        ("rows.json", b"[1, 2]", "rows.json, line 1: expected a list of row objects"),
        (
            "rows.jsonl",
            b'{"predictions": ["a"], "references": ["a"]}\n[1]\n',
            "rows.jsonl, line 2: expected a JSON object",
        ),
        ("rows.csv", "predictions,references\ncafé,café\n".encode("latin-1"), "rows.csv, line 2: not UTF-8 text"),
        ("rows.jsonl.gz", b"\x1f\x8b\x08\x00broken", "rows.jsonl.gz: corrupt gzip data"),
    ],
)
def test_a_bad_upload_is_one_clear_line(tmp_path, file_name, content, message):
    path = tmp_path / file_name
    path.write_bytes(content)
    assert space_error("keyword_prf", "", "", "", str(path)).startswith(message)


def test_upper_case_extensions_and_a_bom_are_read(tmp_path):
    import gzip

    from opinion_metrics.demo.handlers import run

    defaults = [o.default for o in FAMILIES["keyword_prf"].options]
    path = tmp_path / "ROWS.JSONL.GZ"
    path.write_bytes(gzip.compress(b'{"predictions": ["a", "b"], "references": ["a"]}\n'))
    csv_path = tmp_path / "rows.csv"
    csv_path.write_bytes(b"\xef\xbb\xbfpredictions,references\na; b,a\n")
    for upload in (path, csv_path):
        _, summary, _, _ = run("keyword_prf", "", "", "", str(upload), *defaults)
        assert list(space_values(summary).values()) == [0.5, 1.0, 0.6667]


def test_an_uploaded_prediction_sentiments_column_is_used_and_scores_are_not(tmp_path):
    pytest.importorskip("vaderSentiment")
    from opinion_metrics.demo.handlers import run
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    path = tmp_path / "rows.jsonl"
    row = {"predictions": ["great acting", "boring plot"], "references": ["masterpiece"], "scores": [0.9, 0.1]}
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "prediction_sentiments": [0.2, 0.3]}) + "\n")
    defaults = [o.default for o in FAMILIES["sentiment_appropriateness"].options]
    with pytest.raises(gradio.Error, match="prediction_sentiments"):  # a column with a gap (None) is refused
        run("sentiment_appropriateness", "", "", "", str(path), *defaults)
    path.write_text(json.dumps({**row, "prediction_sentiments": [0.2, 0.3]}) + "\n")
    _, summary, _, _ = run("sentiment_appropriateness", "", "", "", str(path), *defaults)
    expected = sentiment_appropriateness([row["predictions"]], [row["references"]], prediction_sentiments=[[0.2, 0.3]])
    assert list(space_values(summary).values()) == [round(expected["sas_from_keywords"], 4)]
    path.write_text(json.dumps(row) + "\n")  # scores alone: VADER reads the keywords
    _, summary, _, _ = run("sentiment_appropriateness", "", "", "", str(path), *defaults)
    expected = sentiment_appropriateness([row["predictions"]], [row["references"]])
    assert list(space_values(summary).values()) == [round(expected["sas_from_keywords"], 4)]


def test_every_control_names_a_library_parameter_and_opens_at_its_default():
    import inspect

    from opinion_metrics.demo.controls import keyword_options as _keyword_options
    from opinion_metrics.families.keyword_diversity import keyword_diversity
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    functions = {
        "keyword_prf": keyword_prf,
        "weighted_keyword_prf": weighted_keyword_prf,
        "semantic_keyword_prf": semantic_keyword_prf,
        "sentiment_appropriateness": sentiment_appropriateness,
        "keyword_diversity": keyword_diversity,
        "aspect_sentiment_score": aspect_sentiment_score,
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


# --- controls from the declarations (issue 12 item 1) ------------------------------------


def test_the_controls_are_the_declared_options_with_their_meanings_and_choices():
    from opinion_metrics.demo.controls import NOT_IN_THE_SPACES
    from opinion_metrics.families import registry as declared

    for name, family in FAMILIES.items():
        declaration = declared.FAMILIES[name]
        expected = [o for o in declaration.options if o.name not in NOT_IN_THE_SPACES]
        assert [o.name for o in family.options] == [o.name for o in expected], name
        for control, option in zip(family.options, expected):
            if option.name not in ("model", "confidence_level"):  # those two: in the Space's words
                assert control.info.startswith(option.meaning), (name, option.name)
            if control.kind == "choice":
                assert list(control.choices) == ["none" if c is None else c for c in option.choices]
        assert family.title == declaration.title
        assert family.meanings == declared.output_meanings(name)


# --- present and absent keywords (issue 14) ----------------------------------------------


@pytest.mark.parametrize("presence", ["present", "absent"])
def test_the_keyword_app_scores_present_or_absent_keywords_of_the_texts(clients, presence):
    family = FAMILIES["keyword_prf"]
    predictions, references, texts = family.example
    summary, per_example, _ = call(clients["keyword_prf"], "keyword_prf", *family.example, presence=presence)
    expected = keyword_prf(
        parse_keyword_lines(predictions)[0],
        parse_keyword_lines(references)[0],
        texts=texts.split("\n"),
        presence=presence,
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    # By hand: "class struggle" and "empire" occur in neither review, every other gold keyword does.
    # present: the predictions that occur (all but "pizza") match every present gold keyword: 1.0.
    # absent: "pizza" against "class struggle" and "empire": nothing matches.
    assert table(summary)["recall"] == (1.0 if presence == "present" else 0.0)
    assert table(summary) != table(call(clients["keyword_prf"], "keyword_prf", *family.example)[0])


def test_presence_in_the_weighted_and_semantic_apps_matches_the_library(clients):
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

    family = FAMILIES["weighted_keyword_prf"]
    predictions, references, texts = family.example
    keywords, scores = parse_keyword_lines(predictions)
    summary, _, _ = call(clients[family.name], family.name, *family.example, presence="present")
    expected = weighted_keyword_prf(
        keywords, scores, parse_keyword_lines(references)[0], texts=texts.split("\n"), presence="present"
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
    family = FAMILIES["semantic_keyword_prf"]
    predictions, references, texts = family.example
    summary, _, _ = call(clients[family.name], family.name, *family.example, presence="absent")
    expected = semantic_keyword_prf(
        parse_keyword_lines(predictions)[0],
        parse_keyword_lines(references)[0],
        texts=texts.split("\n"),
        presence="absent",
    )
    assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})


def test_the_ndcg_curve_follows_presence():
    from opinion_metrics import ndcg_at_k
    from opinion_metrics.demo.plots import ndcg_by_rank

    data = {
        "predictions": [["scam", "family", "poverty", "fraud"], ["x", "y"]],
        "references": [["fraud", "poverty", "scam"], ["x", "z"]],
        "texts": ["a family scam and a fraud", "x and z"],
    }
    options = {"match": "substring", "relevance": "graded", "zero_division": 0.0, "presence": "present"}
    expected = [ndcg_at_k(**data, k=k, presence="present") for k in range(1, 6)]
    assert ndcg_by_rank(data, options, 5) == pytest.approx(expected)
    assert expected != [ndcg_at_k(data["predictions"], data["references"], k=k) for k in range(1, 6)]


def test_an_uploaded_review_column_serves_presence_and_presence_without_texts_is_a_clear_error(tmp_path):
    from opinion_metrics.demo.handlers import run

    family = FAMILIES["keyword_prf"]
    values = {o.name: o.default for o in family.options} | {"presence": "present"}
    path = tmp_path / "rows.jsonl"
    rows = [
        {"predictions": ["jedi", "pizza"], "references": ["jedi", "empire"], "review": "a jedi film"},
        {"predictions": ["satire"], "references": ["satire", "comedy"], "review": "a satire, a comedy"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    _, summary, _, _ = run("keyword_prf", "", "", "", str(path), *values.values())
    expected = keyword_prf(
        [r["predictions"] for r in rows],
        [r["references"] for r in rows],
        texts=[r["review"] for r in rows],
        presence="present",
    )
    # By hand: line 1 keeps jedi / jedi (1, 1, 1); line 2 keeps satire / satire, comedy (1, 0.5, 2/3).
    assert space_values(summary) == {"precision": 1.0, "recall": 0.75, "f1": 0.8333}
    assert space_values(summary) == {k: round(v, 4) for k, v in expected.items()}
    for name in ("keyword_prf", "weighted_keyword_prf"):
        message = space_error(name, "a (0.5)", "a", "", None, presence="absent")
        assert message.startswith("presence 'absent' needs the texts: one review per line")


# --- confidence intervals (issue 13 item 2) ----------------------------------------------


def _interval(low, high):
    return f"[{low:.4f}, {high:.4f}]"


@pytest.mark.parametrize(
    "name", ["keyword_prf", "weighted_keyword_prf", "sentiment_appropriateness", "aspect_sentiment_score"]
)
def test_the_intervals_checkbox_shows_the_librarys_interval_next_to_each_value(clients, name):
    if name == "sentiment_appropriateness":
        pytest.importorskip("vaderSentiment")
    from opinion_metrics.families import registry as declared

    family = FAMILIES[name]
    summary, rows, _ = call(clients[name], name, *family.example, confidence_level=True)
    assert summary["headers"] == ["metric", "value"]
    inputs = {
        "keyword_prf": lambda p, r, t: ((parse_keyword_lines(p)[0], parse_keyword_lines(r)[0]), {}),
        "weighted_keyword_prf": lambda p, r, t: ((*parse_keyword_lines(p), parse_keyword_lines(r)[0]), {}),
        "sentiment_appropriateness": lambda p, r, t: (
            (parse_keyword_lines(p)[0], parse_keyword_lines(r)[0]),
            {"texts": t.split("\n")},
        ),
        "aspect_sentiment_score": lambda p, r, a: ((parse_rating_lines(p), parse_rating_lines(r)), {}),
    }[name]
    arguments, keywords = inputs(*family.example)
    expected = declared.FAMILIES[name].function(*arguments, **keywords, confidence_level=0.95)
    shown = space_results(summary)  # each value with its interval below it, "[low, high]"
    assert shown == {
        key: (round(expected[key], 4), (round(expected[f"{key}_ci_low"], 4), round(expected[f"{key}_ci_high"], 4)))
        for key in shown
    }
    assert all(
        f"<br>[{low:.4f},\u00a0{high:.4f}]" in row[1]
        for row, (_, (low, high)) in zip(summary["data"][1:], shown.values())
    )
    assert expected[next(iter(shown)) + "_ci_low"] < expected[next(iter(shown)) + "_ci_high"]  # a real interval
    if name == "aspect_sentiment_score":  # each aspect's F1 and R2 intervals in the per-aspect table
        columns = dict(zip(rows["headers"], zip(*rows["data"])))
        aspects = columns["aspect"]
        assert list(columns["f1_ci_low"]) == [round(expected[f"f1_{a}_ci_low"], 4) for a in aspects]
        assert list(columns["r2_ci_high"])[:-1] == [round(expected[f"r2_{a}_ci_high"], 4) for a in aspects[:-1]]
        assert columns["r2_ci_high"][-1] == "n/a (no overlap)"


def _error_bars(axes):
    """(x, y) extents of each error bar line drawn on `axes`."""
    from matplotlib.collections import LineCollection

    return [
        segment
        for collection in axes.collections
        if isinstance(collection, LineCollection)
        for segment in collection.get_segments()
    ]


def test_the_plots_draw_the_intervals_as_error_bars():
    from opinion_metrics.demo.controls import evaluate_family, keyword_options
    from opinion_metrics.demo.plots import plot_for

    family = FAMILIES["aspect_sentiment_score"]
    options = {o.name: o.default for o in family.options} | {"confidence_level": True}
    data = {
        "predictions": parse_rating_lines(family.example[0]),
        "references": parse_rating_lines(family.example[1]),
        "aspects": family.example[2].split(", "),
    }
    summary, per_aspect = evaluate_family(family.name, data, options)
    axes = plot_for(family.name, data, options, summary, per_aspect).axes[0]
    expected = aspect_sentiment_score(data["predictions"], data["references"], confidence_level=0.95)
    vertical = sorted(
        (round(s[0][0], 6), round(s[0][1], 9), round(s[1][1], 9)) for s in _error_bars(axes) if s[0][0] == s[1][0]
    )
    f1_bars = [
        (round(j - 0.2, 6), round(expected[f"f1_{a}_ci_low"], 9), round(expected[f"f1_{a}_ci_high"], 9))
        for j, a in enumerate(data["aspects"])
    ]
    assert set(f1_bars) <= set(vertical)
    assert "[" in axes.get_title() and f"{expected['score_ci_low']:.3f}" in axes.get_title()
    # The nDCG curve: an error bar at the chosen k spanning the library's ndcg@k interval.
    family = FAMILIES["weighted_keyword_prf"]
    options = {o.name: o.default for o in family.options} | {"confidence_level": True, "k": 3}
    keywords, scores = parse_keyword_lines(family.example[0])
    data = {"predictions": keywords, "scores": scores, "references": parse_keyword_lines(family.example[1])[0]}
    summary, per_example = evaluate_family(family.name, data, options)
    axes = plot_for(family.name, data, options, summary, per_example).axes[0]
    expected = weighted_keyword_prf(keywords, scores, data["references"], k=3, confidence_level=0.95)
    ((low, high),) = [(s[0][1], s[1][1]) for s in _error_bars(axes)]
    assert (low, high) == pytest.approx((expected["ndcg@3_ci_low"], expected["ndcg@3_ci_high"]))
    assert keyword_options({"confidence_level": True}) == {"confidence_level": 0.95}


def test_the_combined_app_shows_intervals_and_keyword_diversity(clients):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("vaderSentiment")
    from opinion_metrics.embeddings.encoder import DEFAULT_MODEL
    from opinion_metrics.families.keyword_diversity import keyword_diversity

    predictions = "great acting (0.9); moving story (0.6)\nboring plot (0.8); space (0.3); plot (0.2)"
    _, result, _ = clients["combined"].predict(
        predictions,
        "masterpiece; moving story\ndull; boring plot; space opera",
        "A moving, beautiful film.\nDull and far too long.",
        None,
        True,
        api_name="/compare",
    )
    assert result["headers"] == ["metric", "value"]
    rows = {tuple(name.split(": ")): found for name, found in space_results(result).items()}
    keywords = parse_keyword_lines(predictions)[0]
    expected = keyword_diversity(keywords, model=DEFAULT_MODEL, confidence_level=0.95)
    # By hand: line 2's words boring, plot, space, plot: 3 distinct of 4; line 1: 4 of 4.
    assert expected["unique_token_ratio"] == pytest.approx((1 + 3 / 4) / 2)
    for key in ("unique_keyword_ratio", "unique_token_ratio", "self_similarity"):
        assert rows[("keyword_diversity", key)] == (
            round(expected[key], 4),
            (round(expected[f"{key}_ci_low"], 4), round(expected[f"{key}_ci_high"], 4)),
        )
    f1 = keyword_prf(
        keywords, [["masterpiece", "moving story"], ["dull", "boring plot", "space opera"]], confidence_level=0.95
    )
    assert rows[("keyword_prf", "f1")] == (round(f1["f1"], 4), (round(f1["f1_ci_low"], 4), round(f1["f1_ci_high"], 4)))


# --- two systems compared (issue 13 item 3) ----------------------------------------------


def _typed(**systems):
    """Systems typed in one box: every line starts with [its name]."""
    return "\n".join(f"[{name}] {line}" for name, text in systems.items() for line in text.split("\n"))


def _p(text):
    return 0.0 if text.startswith("<") else float(text)


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_the_comparison_tab_gives_compare_systems_values_with_holm_over_the_systems(clients, method):
    from opinion_metrics import compare_systems
    from opinion_metrics.demo.combined import _GOLD, _SYSTEM_A, _SYSTEM_B, _SYSTEM_C, _SYSTEMS
    from opinion_metrics.stats.significance import holm

    status, result, notes, _ = clients["combined"].predict(
        "keyword_prf", _SYSTEMS, _GOLD, "", "all", method, 0.95, api_name="/compare_systems"
    )
    assert status.startswith(
        "Compared on the text boxes: 3 systems (A, B, C) named at the start of their lines: A against B, C, "
        "8 examples paired by position"
    )
    assert status.endswith(f"({'keyword_prf'}, {method} test, 1,000 resamples, seed 0)")  # no internal names
    assert "None" not in status and "not given" not in status
    assert result["headers"] == [
        "system", "metric", "A", "value", "difference", "95% interval", "p", "p (Holm)", "significant"
    ]  # fmt: skip
    a, b, c, gold = (parse_keyword_lines(text)[0] for text in (_SYSTEM_A, _SYSTEM_B, _SYSTEM_C, _GOLD))
    expected = {
        name: compare_systems("keyword_prf", a, other, gold, method=method) for name, other in (("B", b), ("C", c))
    }
    for system, metric, base, value, difference, interval, p, p_holm, significant in result["data"]:
        row = expected[system][metric.removesuffix(" ↑")]
        assert [base, value, difference, interval] == [
            f"{row['a']:.4f}", f"{row['b']:.4f}", f"{row['difference']:+.4f}",
            f"[{row['difference_ci_low']:+.4f}, {row['difference_ci_high']:+.4f}]",
        ]  # fmt: skip
        assert _p(p) == pytest.approx(row["p_value"], abs=5e-4)
        adjusted = holm([expected[name][metric.removesuffix(" ↑")]["p_value"] for name in ("B", "C")])
        assert _p(p_holm) == pytest.approx(adjusted["BC".index(system)], abs=5e-4)
        assert significant == ("yes" if adjusted["BC".index(system)] < 0.05 else "no")
    # By hand: B matches 23 of the 24 gold keywords one-to-one, A 3 (comedy, war, city): F1 is
    # 23/24 against 3/24; B wins on all 8 examples, so the permutation p-value is about 2 / 2^8.
    assert expected["B"]["f1"]["a"] == pytest.approx(3 / 24) and expected["B"]["f1"]["b"] == pytest.approx(23 / 24)
    assert "Holm's correction for the 2 systems compared with A" in notes
    assert "B vs A: 8 pairs, 8 scored differently" in notes and "only 8 pairs" in notes
    # one system against the baseline: no correction
    status, result, notes, _ = clients["combined"].predict(
        "keyword_prf", _SYSTEMS, _GOLD, "", "all", method, 0.95, None, "B", "C", api_name="/compare_systems"
    )
    assert status.startswith(
        "Compared on the text boxes: 3 systems (A, B, C) named at the start of their lines: B against C,"
    )
    assert result["headers"][-2:] == ["p", "significant"] and {row[0] for row in result["data"]} == {"C"}
    assert "Holm" not in notes


def test_the_comparison_of_a_system_with_itself_is_not_significant_and_errors_are_clear(clients):
    from opinion_metrics.demo.combined import _GOLD, _SYSTEM_B

    _, result, _, _ = clients["combined"].predict(
        "keyword_prf",
        _typed(A=_SYSTEM_B, B=_SYSTEM_B),
        _GOLD,
        "",
        "all",
        "permutation",
        0.95,
        api_name="/compare_systems",
    )
    assert all(row[4] == "+0.0000" and row[6] == "1.000" and row[7] == "no" for row in result["data"])
    for arguments, message in [
        (("keyword_prf", "a\nb", "a\nb", "", "all"), "compare needs at least two systems"),
        (("keyword_prf", "[A] a\n[B] a\n[A] b", "a\nb", "", "all"), "system 'A' has 2 lines and 'B' 1"),
        (("weighted_keyword_prf", "[A] a\n[B] a", "a", "", "all"), "need a score per keyword"),
        (("keyword_prf", "[A] a\n[B] b", "a", "", "present"), "presence 'present' needs the texts"),
        (("keyword_prf", "[A] a\n[B] b", "", "", "all"), r"references has 0 \(line 1 has no references\)"),
    ]:
        with pytest.raises(gradio_client.exceptions.AppError, match=message):
            clients["combined"].predict(*arguments, "permutation", 0.95, api_name="/compare_systems")


def test_the_comparison_tab_takes_presence_texts_and_scores():
    from opinion_metrics import compare_systems
    from opinion_metrics.demo.comparing import compare_systems_tab

    a, b = "jedi (0.9); pizza (0.8)\nsatire (0.2)", "jedi (0.6); empire (0.5)\nsatire (0.9); comedy (0.8)"
    gold, texts = "jedi; empire\nsatire; comedy", "a jedi film\na satire, a comedy"
    _, frame, _, _, names, base = compare_systems_tab(
        "weighted_keyword_prf", _typed(a=a, b=b), gold, texts, "present", "bootstrap", 0.9
    )
    assert (names, base) == (["a", "b"], "a")
    expected = compare_systems(
        "weighted_keyword_prf",
        parse_keyword_lines(a)[0],
        parse_keyword_lines(b)[0],
        parse_keyword_lines(gold)[0],
        scores_a=parse_keyword_lines(a)[1],
        scores_b=parse_keyword_lines(b)[1],
        texts=texts.split("\n"),
        presence="present",
        method="bootstrap",
        confidence_level=0.9,
    )
    assert frame["difference"].tolist() == [f"{v['difference']:+.4f}" for v in expected.values()]
    assert frame["90% interval"].tolist() == [
        f"[{v['difference_ci_low']:+.4f}, {v['difference_ci_high']:+.4f}]" for v in expected.values()
    ]


def test_an_example_that_presence_leaves_out_says_so():
    from opinion_metrics.demo.handlers import run

    family = FAMILIES["keyword_prf"]
    values = {o.name: o.default for o in family.options} | {"presence": "absent"}
    # Line 2's only gold keyword "c" occurs in its text: no absent gold keyword, so it is left out.
    _, summary, rows, _ = run("keyword_prf", "a; b\nc", "a; x\nc", "a b\nc", None, *values.values())
    assert rows["f1"].tolist() == [0.0, "left out (no absent gold keyword)"]
    expected = keyword_prf([["a", "b"], ["c"]], [["a", "x"], ["c"]], texts=["a b", "c"], presence="absent")
    # By hand: line 1 keeps no prediction (a and b occur in its text) and the gold x: nothing
    # matches (precision 0 by zero_division); line 2 counts nowhere.
    assert space_values(summary) == {k: round(v, 4) for k, v in expected.items()}
    assert expected == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
