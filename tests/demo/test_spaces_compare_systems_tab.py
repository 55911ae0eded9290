"""Systems compared in the combined Space's compare systems tab (issue 13 item 3): the values
of compare_systems with Holm's correction over the systems, a system against itself, clear
errors, presence, texts and scores."""

import pytest
from space_apps import running_clients

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from opinion_metrics.demo.parsing import parse_keyword_lines  # noqa: E402


@pytest.fixture(scope="module")
def clients():
    yield from running_clients()


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
