"""Gradio demo Space for the aspect_sentiment_score metric (opinion-metrics)."""

from pathlib import Path

from opinion_metrics.demo.ui import build_app

demo = build_app("aspect_sentiment_score", card=Path(__file__).with_name("README.md"))

if __name__ == "__main__":
    demo.launch()  # uploads capped at the size the app states
