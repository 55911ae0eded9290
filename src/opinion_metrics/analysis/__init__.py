"""Verbs over the families: why each example scored what it did (`explain`) and the paired
comparison of two systems (`compare`). Imports `state`, `families` and below.
"""
