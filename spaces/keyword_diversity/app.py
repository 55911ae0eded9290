"""Gradio demo Space for the keyword_diversity measurement (opinion-metrics)."""

from opinion_metrics.demo import build_app

demo = build_app("keyword_diversity")

if __name__ == "__main__":
    demo.launch()
