"""Gradio demo Space: every keyword metric of opinion-metrics side by side."""

from opinion_metrics.demo import build_combined_app

demo = build_combined_app()

if __name__ == "__main__":
    demo.launch()
