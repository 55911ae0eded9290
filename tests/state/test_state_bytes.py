"""MetricState as bytes (SPEC section 12): the declared layout round-trips exactly and refuses
every flipped byte, truncation, foreign or lying header; object options travel by name."""

from __future__ import annotations

import json
import math
import pickle
import struct

import numpy as np
import pytest
from state_cases import ASPECTS, corpus, forge, toy_sentiment

from opinion_metrics import MetricState


def small_states():
    columns = corpus("keyword_prf", 12, seed=2)
    return {
        "values": MetricState("keyword_prf", average="micro").update(**columns),
        "poisson": MetricState("keyword_prf", confidence_level=0.9, n_resamples=5, bootstrap="poisson").update(
            **columns, keys=[f"r{i}" for i in range(12)]
        ),
        "multinomial": MetricState("keyword_prf", confidence_level=0.9, n_resamples=5).update(**columns),
        "empty": MetricState("keyword_prf", top_k=3),
        "aspects": MetricState("aspect_sentiment_score", aspects=ASPECTS).update(
            **corpus("aspect_sentiment_score", 5, seed=1)
        ),
    }


@pytest.mark.parametrize("name", ["values", "poisson", "multinomial", "empty", "aspects"])
def test_bytes_round_trip_exactly_and_refuse_every_flipped_byte_and_truncation(name):
    state = small_states()[name]
    data = state.to_bytes()
    loaded = MetricState.from_bytes(data)
    assert loaded == state and loaded.to_bytes() == data
    if state.n_examples:
        assert loaded.compute() == state.compute()
    assert pickle.loads(pickle.dumps(state)) == state
    for position in range(len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0x10
        with pytest.raises(ValueError):
            MetricState.from_bytes(bytes(flipped))
    for length in range(len(data)):
        with pytest.raises(ValueError):
            MetricState.from_bytes(data[:length])


def test_foreign_wrong_version_and_lying_headers_are_refused():
    state = small_states()["poisson"]
    header = json.loads(state.to_bytes()[14 : 14 + struct.unpack_from("<HI", state.to_bytes(), 8)[1]])
    payload = state.sketch.astype("<u8").tobytes() + b"".join(
        array.astype("<f8").tobytes() for _, array in state.named_arrays()
    )
    assert MetricState.from_bytes(forge(header, payload)) == state  # the forger's layout is the real one
    sketch = header["arrays"][0]
    cases = {
        "magic": b"NOTSTATE" + state.to_bytes()[8:],
        "version": forge(header, payload, version=2),
        "pickle": pickle.dumps(state),
        "empty": b"",
        "noise": np.random.default_rng(0).bytes(5000),
        "json": json.dumps(header).encode(),
        "more resamples": forge(
            {
                **header,
                "arrays": [
                    sketch,
                    {"name": "sums", "shape": [8]},
                    {"name": "weighted", "shape": [6, 8]},
                    {"name": "swapped", "shape": [4, 8]},
                ],
            },
            payload,
        ),
        "huge shape": forge(
            {
                **header,
                "arrays": [
                    sketch,
                    {"name": "sums", "shape": [8]},
                    {"name": "weighted", "shape": [10**15, 8]},
                    {"name": "swapped", "shape": [5, 8]},
                ],
            },
            payload,
        ),
        "other width": forge(
            {
                **header,
                "arrays": [
                    sketch,
                    {"name": "sums", "shape": [4]},
                    {"name": "weighted", "shape": [5, 4]},
                    {"name": "swapped", "shape": [5, 4]},
                ],
            },
            payload,
        ),
        "short payload": forge(header, payload[:-8]),
        "no arrays": forge({**header, "arrays": []}, b""),
        "negative count": forge({**header, "n_examples": -1}, payload),
        "bad option": forge({**header, "options": {**header["options"], "average": "weighted"}}, payload),
        "unknown option": forge({**header, "options": {**header["options"], "colour": 1}}, payload),
        "unknown family": forge({**header, "family": "bleu"}, payload),
        "extra key": forge({**header, "code": "import os"}, payload),
        "not an object": forge([1, 2, 3], payload),
        "nan": forge(header, payload[:-8] + struct.pack("<d", math.nan)),
    }
    rows_state = small_states()["multinomial"]
    rows_header = json.loads(rows_state.to_bytes()[14 : 14 + struct.unpack_from("<HI", rows_state.to_bytes(), 8)[1]])
    rows = rows_state.sketch.astype("<u8").tobytes() + rows_state.named_arrays()[0][1].astype("<f8").tobytes()
    cases["huge rows"] = forge(
        {
            **rows_header,
            "n_examples": 10**15,
            "arrays": [rows_header["arrays"][0], {"name": "rows", "shape": [10**15, 8]}],
        },
        rows,
    )
    messages = {
        "magic": "magic header",
        "huge rows": "declares 64000000000000096 bytes",
        "version": "version 2",
        "huge shape": "shape",
        "unknown family": "bleu",
    }
    for case, data in cases.items():
        with pytest.raises(ValueError, match=messages.get(case)) as error:
            MetricState.from_bytes(data)
        assert "MetricState" in str(error.value) or case in ("bad option", "unknown family"), case


def test_object_options_travel_by_name_and_can_be_given_back():
    state = MetricState("sentiment_appropriateness", sentiment=toy_sentiment, bootstrap="poisson", confidence_level=0.9)
    state.update(**corpus("sentiment_appropriateness", 10, seed=3))
    loaded = MetricState.from_bytes(state.to_bytes())
    assert loaded.compute() == state.compute()
    with pytest.raises(ValueError, match="sentiment holds different objects"):
        state + loaded
    given_back = MetricState.from_bytes(state.to_bytes(), sentiment=toy_sentiment)
    later = MetricState.empty_like(state).update(**corpus("sentiment_appropriateness", 10, seed=4), start=10)
    assert (given_back + later).n_examples == 20
    with pytest.raises(ValueError, match="object option"):
        loaded.update(predictions=[["good"]], references=[["bad"]])
    restored = MetricState.from_bytes(state.to_bytes(), sentiment=toy_sentiment)
    restored.update(predictions=[["good"]], references=[["bad"]], keys=[99])
    assert restored.n_examples == 11
    with pytest.raises(ValueError, match="sentiment"):
        MetricState.from_bytes(state.to_bytes(), sentiment=len)
