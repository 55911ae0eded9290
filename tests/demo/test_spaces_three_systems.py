"""What three systems found in the Spaces (issue 37 item 7), without a browser: the aspect
Space's page after a computation, errors that name the line in the box and the system, typed
scores read by one rule for the whole box (and said in the status when parentheses stay
keyword text), and the compare tab: its baseline list, its advice, its methods note, and
positions counted from 1. The Chromium checks are in test_spaces_three_systems_*in_chromium.py."""

from types import SimpleNamespace

import pytest
from three_systems import PREDICTED_RATINGS, RATINGS, SYSTEMS

gradio = pytest.importorskip("gradio")

from opinion_metrics import aspect_sentiment_score, keyword_prf, weighted_keyword_prf  # noqa: E402
from opinion_metrics.demo import ui  # noqa: E402
from opinion_metrics.demo.comparing import compare_families, compare_systems_tab  # noqa: E402
from opinion_metrics.demo.controls import COMBINED, FAMILIES  # noqa: E402
from opinion_metrics.demo.handlers import _evaluate, run  # noqa: E402
from opinion_metrics.demo.results import space_message  # noqa: E402
from opinion_metrics.families.aspect_sentiment_score import DEFAULT_ASPECTS  # noqa: E402


def _defaults(name: str) -> list:
    return [option.default for option in FAMILIES[name].options]


def _typed(**systems: list[str]) -> str:
    """Systems typed in one box: every line starts with [its name]."""
    return "\n".join(f"[{name}] {line}" for name, lines in systems.items() for line in lines)


def _ratings(rows: list[list[int]]) -> list[str]:
    return [", ".join(map(str, row)) for row in rows]


def _error(*arguments) -> str:
    with pytest.raises(gradio.Error) as raised:
        run(*arguments)
    return raised.value.message


def test_the_aspect_space_updates_its_page_for_three_systems_without_a_why_table():
    """The step after Compute built a why table for the aspect score, which has none (KeyError)."""
    name = "aspect_sentiment_score"
    predictions = _typed(**{system: _ratings(PREDICTED_RATINGS[system]) for system in SYSTEMS})
    outcome = _evaluate(name, predictions, "\n".join(_ratings(RATINGS)), "", None, _defaults(name))
    request = SimpleNamespace(session_hash="three-aspect-systems")
    ui._remember(request, outcome, "compute")
    updates = ui._after(name)(request)
    assert len(updates) == 8  # status, results, per aspect, plot, the system selector, baseline, report, notes
    assert updates[4]["choices"] == list(SYSTEMS) and updates[4]["visible"]
    shown = ui._select(name)("keybert", request)  # gradio takes a tuple as one output's value: the table alone
    expected = aspect_sentiment_score(PREDICTED_RATINGS["keybert"], RATINGS, aspects=list(DEFAULT_ASPECTS))
    assert shown.data["aspect"].tolist() == list(DEFAULT_ASPECTS)
    assert shown.data["score"].tolist() == [round(expected[f"score_{aspect}"], 4) for aspect in DEFAULT_ASPECTS]


def test_a_bad_typed_line_is_named_by_its_line_in_the_box_and_its_system():
    ratings = {system: _ratings(PREDICTED_RATINGS[system]) for system in SYSTEMS}
    ratings["keybert"][1] = "3, 0, x, 0, 0, 0"  # line 10 of the box, keybert's second
    message = _error("aspect_sentiment_score", _typed(**ratings), "\n".join(_ratings(RATINGS)), "", None,
                     *_defaults("aspect_sentiment_score"))  # fmt: skip
    assert message.startswith("predictions (system 'keybert'), line 10: ratings must be integers"), message
    keywords = {"a": ["x (0.5); y (0.1)", "z (0.4)"], "b": ["x (0.5)", "y (0.2); z"]}  # line 4: z has no score
    message = _error("keyword_prf", _typed(**keywords), "x\ny", "", None, *_defaults("keyword_prf"))
    assert message.startswith("predictions (system 'b'), line 4: give a score to every keyword or to none"), message


def _kept(system_lines: list[str]) -> list[list[str]]:
    """The keywords of typed lines with every "(number)" kept as keyword text."""
    return [[item.strip() for item in line.split(";") if item.strip()] for line in system_lines]


def test_typed_scores_are_read_by_one_rule_for_the_whole_box_and_the_status_says_what_stayed_text():
    """`brando (1.5)` cannot be a score: no number in parentheses of the box is one, in every
    system alike (it was decided per system: yake's scores were dropped, tfidf's kept as text)."""
    systems = {
        "tfidf": ["great acting (0.9); brando (1.5)", "heist (0.8); crew (0.4)"],
        "yake": ["great acting (0.9); brando (0.5)", "heist (0.8); vault (0.3)"],
    }
    gold = [["great acting", "brando"], ["heist", "bank robbery"]]
    status, frame, _, _ = run("keyword_prf", _typed(**systems), "great acting; brando\nheist; bank robbery", "",
                              None, *_defaults("keyword_prf"))  # fmt: skip
    for system, lines in systems.items():
        expected = keyword_prf(_kept(lines), gold)
        shown = {row[0].split("\u00a0")[0]: row[1 + list(systems).index(system)] for row in frame.values[1:]}
        assert {key: shown[key].replace("**", "") for key in expected} == {k: f"{v:.4f}" for k, v in expected.items()}
    assert status.startswith("Computed on the text boxes: 2 systems")
    assert "⚠ predictions: no number in parentheses is read as a score in this box, as `brando (1.5)` is" in status
    assert "`great acting (0.9)` (line 1), `brando (1.5)` (line 1), `heist (0.8)` (line 2) and 5 more" in status
    # The combined Space reads the box alike: no scores, so no weighted family, and says why.
    status, frame, _, _ = compare_families(_typed(**systems), "great acting; brando\nheist; bank robbery", "", None)
    assert "`brando (1.5)` is outside [0, 1]" in status and "weighted_keyword_prf needs a score" in status
    # Scores in [0, 1] everywhere: read in every system, nothing said.
    systems["tfidf"][0] = "great acting (0.9); brando (0.7)"
    status, frame, _, _ = run("weighted_keyword_prf", _typed(**systems), "great acting; brando\nheist; bank robbery",
                              "", None, *_defaults("weighted_keyword_prf"))  # fmt: skip
    assert "⚠" not in status
    expected = weighted_keyword_prf([["great acting", "brando"], ["heist", "crew"]], [[0.9, 0.7], [0.8, 0.4]], gold)
    assert frame.values[1][1].replace("**", "") == f"{expected['weighted_precision']:.4f}"


def test_parentheses_without_a_score_are_said_in_the_status():
    status = run("keyword_prf", "Star Wars (IV); jedi\nheist", "star wars\nheist", "", None,
                 *_defaults("keyword_prf"))[0]  # fmt: skip
    assert status.endswith("⚠ predictions: parentheses without a score kept as keyword text: `Star Wars (IV)` (line 1)")
    status = run("keyword_prf", "jedi\nheist", "star wars (1977)\nheist", "", None, *_defaults("keyword_prf"))[0]
    assert "⚠ references: parentheses kept as keyword text (gold keywords take no scores): `star wars (1977)`" in status
    status = run("keyword_prf", "jedi (0.5)\nheist (0.1)", "jedi\nheist", "", None, *_defaults("keyword_prf"))[0]
    assert "⚠" not in status


def test_the_compare_tabs_baseline_list_follows_every_change_of_the_box_not_only_typing():
    """A paste fires no `input` event: the choices follow the box's `change` event, the last one run."""
    from opinion_metrics.demo.combined import _typed_choices, build_combined_app

    app = build_combined_app()
    try:
        found = [function for function in app.fns.values() if function.fn is _typed_choices]
        assert len(found) == 1
        assert [event for _, event in found[0].targets] == ["change"]
        assert found[0].trigger_mode == "always_last"
    finally:
        app.close()


def test_an_error_in_the_compare_tab_names_its_system_and_gives_advice_that_fits_the_tab():
    """The tab has no clip_scores control: the advice is to give scores in [0, 1]; the system whose
    score is out of range is named (the library's comparison names neither)."""
    for bad in ("a", "b"):
        systems = {"a": ["x (0.5); y (0.2)", "z (0.3)"], "b": ["x (0.4)", "z (0.5); w (0.2)"]}
        systems[bad][1] = systems[bad][1].replace("(0.3)", "(1.5)").replace("(0.5)", "(1.5)")
        with pytest.raises(gradio.Error) as raised:
            compare_systems_tab("weighted_keyword_prf", _typed(**systems), "x\nz", "")
        message = raised.value.message
        line = {"a": 2, "b": 4}[bad]
        assert message.startswith(f"system '{bad}': scores: example 2 (predictions line {line}), keyword 1 ("), message
        assert message.endswith("score 1.5 is outside [0, 1]; give scores in [0, 1] (this tab uses them as they "
                                "are, never clipped)")  # fmt: skip
        assert "tick" not in message
    # The family Space has the control: its advice names it.
    assert "tick clip_scores" in _error("weighted_keyword_prf", "x (1.5)", "x", "", None,
                                        *_defaults("weighted_keyword_prf"))  # fmt: skip


EMBEDDING_FAMILIES = ("semantic_keyword_prf", "keyword_diversity")  # a minute each on a CPU: slow


@pytest.mark.parametrize(
    "family", [pytest.param(f, marks=pytest.mark.slow) if f in EMBEDDING_FAMILIES else f for f in COMBINED]
)
def test_the_compare_tabs_methods_note_names_the_family_shown(family):
    from opinion_metrics.demo.combined import _GOLD, _SYSTEMS

    if family in EMBEDDING_FAMILIES:
        pytest.importorskip("sentence_transformers")
    if family == "sentiment_appropriateness":
        pytest.importorskip("vaderSentiment")
    predictions = _SYSTEMS
    if family == "weighted_keyword_prf":  # a score per keyword
        named = [line.split("] ", 1) for line in _SYSTEMS.split("\n")]
        predictions = "\n".join(f"{name}] " + "; ".join(f"{k} (0.5)" for k in rest.split("; ")) for name, rest in named)
    notes = compare_systems_tab(family, predictions, _GOLD, "")[2]
    assert f"(for {family}, " in notes
    assert family == "keyword_prf" or "(for keyword_prf, " not in notes


def test_messages_count_keywords_from_1_and_leave_quoted_text_as_it_is(tmp_path):
    def where(index: int) -> str:
        return f"line {index + 1}"

    problem = ValueError("predictions: example 2, keyword 0 ('example 0; keyword 3'): bad")
    assert space_message(problem, where) == "predictions: line 3, keyword 1 ('example 0; keyword 3'): bad"
    problem = ValueError("""predictions: example 0, keyword 4 ("it's example 1"): bad; pass clip_scores=True to clip""")
    assert space_message(problem, where, ()) == (
        """predictions: line 1, keyword 5 ("it's example 1"): bad; give scores in [0, 1] (this tab uses them as """
        "they are, never clipped)"
    )
    # an upload's row: its line in the file and its example, both counted from 1
    path = tmp_path / "bad.jsonl"
    path.write_text('{"predictions": ["a"], "scores": [0.5], "references": ["a"]}\n'
                    '{"predictions": ["b", "c"], "scores": [0.5, 2], "references": ["b"]}\n')  # fmt: skip
    message = _error("weighted_keyword_prf", "", "", "", str(path), *_defaults("weighted_keyword_prf"))
    assert message.startswith("scores: line 2 of bad.jsonl (example 2), keyword 2 ('c'): score 2"), message
