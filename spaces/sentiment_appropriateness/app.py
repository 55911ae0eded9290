"""Gradio demo Space for the sentiment_appropriateness metric (opinion-metrics)."""

from opinion_metrics.demo import build_app

demo = build_app("sentiment_appropriateness")

if __name__ == "__main__":
    demo.launch()
