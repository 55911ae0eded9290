"""What the Spaces read: typed keyword and rating lines, uploads (capped, typed, bounded in
memory, read once, upper-case extensions and a BOM, a prediction_sentiments column), and
errors in the Space's own words (issue 10 items 13, 15-17): lines counted from 1, uploaded
rows located, columns named, HTML escaped, one clear line for a bad upload."""

import json

import pytest
from conftest import space_values
from space_apps import launch, space_error

gradio = pytest.importorskip("gradio")

from opinion_metrics import keyword_prf  # noqa: E402
from opinion_metrics.demo.combined import build_combined_app  # noqa: E402
from opinion_metrics.demo.comparing import compare_families  # noqa: E402
from opinion_metrics.demo.controls import COMBINED, FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines, parse_rating_lines  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402
from opinion_metrics.families.aspect_sentiment_score import aspect_sentiment_score  # noqa: E402


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
    assert {name.split(": ")[0] for name in space_values(frame)} == set(COMBINED)
    assert status == "Computed on the uploaded file `rows.jsonl`: 1 example · every family with its default options."


def test_errors_count_text_box_lines_and_keywords_from_1_and_name_the_controls():
    message = space_error("weighted_keyword_prf", "a (0.5)\nb (1.5)", "a\nb", "", None)
    assert message.startswith("scores: line 2, keyword 1 ('b'): score 1.5 is outside [0, 1]; tick clip_scores")


def test_errors_locate_an_uploaded_row_and_are_html_escaped(tmp_path):
    path = tmp_path / "upload.jsonl"
    rows = [
        '{"predictions": ["a"], "references": ["a"], "scores": [0.5]}',
        '{"predictions": ["b"], "references": ["b"], "scores": [2]}',
    ]
    path.write_text("\n".join(rows) + "\n")
    message = space_error("weighted_keyword_prf", "", "", "", str(path))
    assert message.startswith("scores: line 2 of upload.jsonl (example 2), keyword 1 ('b'): score 2")
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


def test_a_typed_systems_empty_last_example_is_kept():
    from opinion_metrics.demo.handlers import run

    predictions = "[a] satire; pizza\n[a]\n[b] satire\n[b] jedi"
    defaults = [option.default for option in FAMILIES["keyword_prf"].options]
    status, summary, *_ = run("keyword_prf", predictions, "satire\njedi", "", None, *defaults)
    assert "2 systems" in status and "2 examples each" in status, status
    expected = keyword_prf([["satire", "pizza"], []], [["satire"], ["jedi"]])
    assert space_values(summary, "a") == {key: round(value, 4) for key, value in expected.items()}
    expected = keyword_prf([["satire"], ["jedi"]], [["satire"], ["jedi"]])
    assert space_values(summary, "b") == {key: round(value, 4) for key, value in expected.items()}
