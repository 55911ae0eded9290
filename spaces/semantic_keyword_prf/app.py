"""Gradio demo Space for the semantic_keyword_prf metric (opinion-metrics)."""

from opinion_metrics.demo import build_app

demo = build_app("semantic_keyword_prf")

if __name__ == "__main__":
    demo.launch()
