"""Gradio demo Space for the sentiment_tuple_prf metric (opinion-metrics)."""

from pathlib import Path

from opinion_metrics.demo.ui import build_app

demo = build_app("sentiment_tuple_prf", card=Path(__file__).with_name("README.md"))

if __name__ == "__main__":
    demo.launch()  # uploads capped at the size the app states
