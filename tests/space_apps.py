"""The Spaces' apps for the tests that drive them: launched on a local port, a client of each
over real HTTP (gradio_client), their API call, their results table as values, and the error
a Space shows."""

import pytest
from conftest import space_values

gradio = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from opinion_metrics.demo.combined import build_combined_app  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.ui import build_app  # noqa: E402


def launch(app):
    _, url, _ = app.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    return url


def running_clients():
    """A client of each family's app and of the combined app ("combined"), over real HTTP; the
    apps closed after (the body of a module fixture: `yield from`)."""
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


def space_error(name, *args, **keywords):
    from opinion_metrics.demo.handlers import run

    family = FAMILIES[name]
    values = [keywords.pop(o.name, o.default) for o in family.options]
    with pytest.raises(gradio.Error) as error:
        run(name, *args, *values, **keywords)
    return error.value.message
