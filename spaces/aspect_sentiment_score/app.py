"""Gradio demo Space for the aspect_sentiment_score metric (opinion-metrics)."""

from opinion_metrics.demo import build_app

demo = build_app("aspect_sentiment_score")

if __name__ == "__main__":
    demo.launch()
