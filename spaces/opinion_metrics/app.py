"""Gradio demo Space: every keyword metric of opinion-metrics side by side."""

from pathlib import Path

from opinion_metrics.demo.combined import build_combined_app

demo = build_combined_app(card=Path(__file__).with_name("README.md"))

if __name__ == "__main__":
    demo.launch()  # uploads capped at the size the app states
